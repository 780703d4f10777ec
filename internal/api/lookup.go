package api

import (
	"reflect"
	"strings"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/secret"
)

// ramdiskHeartbeatTimeout is Ironic's [api]ramdisk_heartbeat_timeout (s).
const ramdiskHeartbeatTimeout = 300

// maxLookupAddresses bounds the MACs of one lookup: far more than a
// machine's NICs, far fewer than a query can take. The conductor resolves
// them in one store query (store.GetNodeByPortAddress).
const maxLookupAddresses = 256

func (hs agentAPI) lookupRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.lookup, public()}}, "/v1/lookup")
}

// GET /v1/lookup?addresses=mac1,mac2&node_uuid=...: how an agent finds its
// node (public in Ironic). Any miss — unknown node, or a node in a state
// where no agent is expected — is a plain 404.
func (hs agentAPI) lookup(rc *call) error {
	s := hs.s
	if rc.minor < minorHeartbeat {
		return errNotFound()
	}
	var macs []string
	for _, v := range rc.query["addresses"] {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				macs = append(macs, a)
			}
			if len(macs) > maxLookupAddresses {
				return invalid("Too many addresses: a lookup takes at most %d MAC addresses.", maxLookupAddresses)
			}
		}
	}
	nodeUUID := strings.TrimSpace(rc.query.Get("node_uuid"))
	if len(macs) == 0 && nodeUUID == "" {
		return invalid("Either node_uuid or addresses must be provided.")
	}
	n, token, err := s.cfg.Agents.Lookup(rc.ctx, macs, nodeUUID)
	if err != nil {
		return err
	}
	w := &jw{}
	w.structValue(reflect.ValueOf(lookupAnswer(rc, n, token)))
	return rc.json(200, w)
}

// lookupAnswer is the answer to the agent of node n that is handed token
// (ipa.MaskedToken after the first lookup): the node's fields Ironic
// returns, its secrets masked, and the agent's configuration.
func lookupAnswer(rc *call, n *model.Node, token string) ipa.LookupResponse {
	// Without the inspection data Anvil keeps there (Ironic keeps it in
	// its own table, so its lookup never carries it): with IPA's logs it
	// is >100 KB the agent has no use for (seen with IPA 9.4.3).
	dii := make(map[string]any, len(n.DriverInternalInfo))
	for k, v := range n.DriverInternalInfo {
		if k != inventoryKey && k != pluginDataKey {
			dii[k] = v
		}
	}
	return ipa.LookupResponse{
		Node: ipa.LookupNode{
			UUID:               n.UUID,
			ProvisionState:     n.ProvisionState, // Anvil's: tells its agent to inspect
			Properties:         n.Properties,
			InstanceInfo:       maskedInstanceInfo(n.InstanceInfo),
			DriverInternalInfo: secret.Value(dii).(map[string]any),
			Links: []ipa.Link{{Href: rc.link(false, "nodes", n.UUID), Rel: "self"},
				{Href: rc.link(true, "nodes", n.UUID), Rel: "bookmark"}},
		},
		Config: ipa.LookupConfig{
			HeartbeatTimeout:   ramdiskHeartbeatTimeout,
			AgentToken:         token,
			AgentTokenRequired: true,
			// Ironic's defaults: agents send no metrics.
			Metrics: map[string]any{"backend": "noop", "prepend_host": false, "prepend_uuid": false,
				"prepend_host_reverse": true, "global_prefix": nil},
			MetricsStatsd: map[string]any{"statsd_host": "localhost", "statsd_port": 8125},
		},
	}
}

// maskedInstanceInfo is instance_info with its secrets masked as a node's
// rendering masks them: secret.Value, and Ironic's instance_info secrets
// (instanceInfoSecrets) whenever they hold a value.
func maskedInstanceInfo(info map[string]any) map[string]any {
	out := secret.Value(info).(map[string]any)
	for k, v := range info {
		if maskedWhenSet(instanceInfoSecrets, k, v) {
			out[k] = secretMask
		}
	}
	return out
}
