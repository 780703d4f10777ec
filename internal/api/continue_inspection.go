package api

import (
	"strings"
)

// minorContinueInspection is when Ironic added POST /v1/continue_inspection.
const minorContinueInspection = 84

func (hs agentAPI) continueInspectionRoutes() {
	s := hs.s
	s.handle(endpoint{"POST": {hs.continueInspection, public()}}, "/v1/continue_inspection")
}

// POST /v1/continue_inspection[?node_uuid=]: a ramdisk pushes its inventory
// ({"inventory": {...}, plugin data...}) for a node in inspect wait, found
// by node_uuid or by the MACs of the inventory's interfaces (public in
// Ironic). Once a lookup issued the node's token, the body's "agent_token"
// must be it (the heartbeat's rule), else 401 and nothing changes; before
// that (IPA posts first, then looks up) none is needed, as in Ironic. The other keys become the
// node's plugin_data. Answers 202 {"uuid"}.
func (hs agentAPI) continueInspection(rc *call) error {
	s := hs.s
	// Also at the base version 1.1 (no version header), as Ironic allows,
	// for ramdisks that post inspector-style (IPA's inspector.py sends none).
	if rc.minor < minorContinueInspection && rc.minor != 1 {
		return errNotFound()
	}
	v, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	data, _ := v.(map[string]any)
	inv, _ := data["inventory"].(map[string]any)
	if inv == nil {
		return invalid("Missing or malformed \"inventory\" in the inspection data.")
	}
	delete(data, "inventory")
	token, _ := data["agent_token"].(string)
	delete(data, "agent_token")
	var macs []string
	ifaces, _ := inv["interfaces"].([]any)
	for _, i := range ifaces {
		im, _ := i.(map[string]any)
		if mac, _ := im["mac_address"].(string); strings.TrimSpace(mac) != "" {
			macs = append(macs, strings.TrimSpace(mac))
		}
	}
	nodeUUID := strings.TrimSpace(rc.query.Get("node_uuid"))
	if len(macs) == 0 && nodeUUID == "" {
		return invalid("No lookup information provided")
	}
	n, err := s.cfg.Agents.ContinueInspection(rc.ctx, macs, nodeUUID, token, inv, data)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("uuid")
	w.str(n.UUID)
	w.endObj()
	return rc.json(202, w)
}
