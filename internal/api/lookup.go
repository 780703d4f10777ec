package api

import (
	"strings"
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
	w.rootObj()
	w.key("node")
	w.obj()
	w.key("uuid")
	w.str(n.UUID)
	w.key("provision_state") // Anvil's addition: tells its agent to inspect (ipa.LookupNode)
	w.str(string(n.ProvisionState))
	w.key("properties")
	w.object(n.Properties)
	w.key("instance_info")
	w.masked(n.InstanceInfo, instanceInfoSecrets...)
	// Without the inspection data Anvil keeps there (Ironic keeps it in
	// its own table, so its lookup never carries it): with IPA's logs it
	// is >100 KB the agent has no use for (seen with IPA 9.4.3).
	dii := make(map[string]any, len(n.DriverInternalInfo))
	for k, v := range n.DriverInternalInfo {
		if k != inventoryKey && k != pluginDataKey {
			dii[k] = v
		}
	}
	w.key("driver_internal_info")
	w.masked(dii)
	w.key("links")
	rc.links(w, "nodes", n.UUID)
	w.endObj()
	w.key("config")
	w.obj()
	w.key("heartbeat_timeout")
	w.integer(ramdiskHeartbeatTimeout)
	w.key("agent_token")
	w.str(token)
	w.key("agent_token_required")
	w.boolean(true)
	w.key("agent_md5_checksum_enable")
	w.boolean(false)
	w.key("metrics") // Ironic's defaults: agents send no metrics
	w.object(map[string]any{"backend": "noop", "prepend_host": false, "prepend_uuid": false,
		"prepend_host_reverse": true, "global_prefix": nil})
	w.key("metrics_statsd")
	w.object(map[string]any{"statsd_host": "localhost", "statsd_port": 8125})
	w.endObj()
	w.endObj()
	return rc.json(200, w)
}
