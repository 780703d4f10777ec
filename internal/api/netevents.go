package api

import (
	"net"
	"slices"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// minorEvents is the version that added POST /v1/events.
const minorEvents = 54

// eventNames are the external events Ironic takes (EVENT_VALIDATORS).
var eventNames = []string{"network.bind_port", "network.unbind_port", "network.delete_port"}

// networkEventProps is Ironic's NETWORK_EVENT_VALIDATOR schema.
var networkEventProps = []nodeProp{
	{name: "event", types: []string{"string"}},
	{name: "port_id", types: []string{"string"}},
	{name: "mac_address", types: []string{"string"}},
	{name: "status", types: []string{"string"}},
	{name: "device_id", types: tStr},
	{name: "binding:host_id", types: tStr},
	{name: "binding:vnic_type", types: tStr},
}

func (s *Server) netEventRoutes() {
	s.handle(endpoint{"POST": {s.postEvents, rule("baremetal:events:post")}}, "/v1/events")
}

// POST /v1/events (1.54): Neutron's port events. Ironic validates them and
// only logs them (its network interfaces act on nothing here); so does
// Anvil, answering 204.
func (s *Server) postEvents(rc *call) error {
	if rc.minor < minorEvents {
		return errNotFound()
	}
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	doc, ok := body.(map[string]any)
	if !ok {
		return schemaError("evts", "%s is not of type 'object'", maskedRepr(body))
	}
	evs, ok := doc["events"]
	if !ok {
		return schemaError("evts", "'events' is a required property")
	}
	var extra []string
	for k := range doc {
		if k != "events" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return additionalProps("evts", extra)
	}
	list, ok := evs.([]any)
	if !ok {
		return schemaError("evts", "%s is not of type 'array'", maskedRepr(evs))
	}
	if len(list) == 0 {
		return schemaError("evts", "[] is too short")
	}
	for _, e := range list {
		if err := checkNetworkEvent(e); err != nil {
			return err
		}
	}
	for _, e := range list {
		s.log.Debug("received external event", "request_id", rc.reqID, "event", e)
	}
	rc.w.WriteHeader(204)
	return nil
}

// checkNetworkEvent is Ironic's per-event validation: a known event name,
// the network event schema, UUIDs and a MAC address.
func checkNetworkEvent(e any) error {
	m, ok := e.(map[string]any)
	if !ok {
		return schemaError("evts", "%s is not of type 'object'", maskedRepr(e))
	}
	name, ok := m["event"]
	if !ok {
		return schemaError("evts", "'event' is a required property")
	}
	if s, isStr := name.(string); !isStr || !slices.Contains(eventNames, s) {
		return schemaError("evts", "%s is not one of %s", maskedRepr(name), pyrepr.Strings(eventNames))
	}
	if _, err := validateObject("event", m, networkEventProps, "event", "port_id", "mac_address", "status"); err != nil {
		return err
	}
	for _, k := range []string{"port_id", "device_id", "binding:host_id"} {
		if v, ok := m[k].(string); ok && !isUUIDLike(v) {
			return invalid("Expected UUID for %s: %s", k, v)
		}
	}
	if hw, err := net.ParseMAC(m["mac_address"].(string)); err != nil || len(hw) != 6 {
		return invalid("Expected valid MAC address for mac_address: %s", m["mac_address"])
	}
	return nil
}
