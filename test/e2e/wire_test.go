package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestWireProtocol checks, over plain HTTP, the parts of Ironic's wire
// protocol clients rely on without looking: microversion headers, request
// ids, the 1.1 view of a node, 202 + Location for provision requests and the
// states document.
func TestWireProtocol(t *testing.T) {
	t.Parallel()
	base := startServer(t)

	root := api(t, base, "", http.MethodGet, "/", nil)
	if root.Status != http.StatusOK {
		t.Fatalf("GET / = HTTP %d %s", root.Status, root.Body)
	}
	doc := mustJSON[map[string]any](t, "GET /", string(root.Body))
	dv, _ := doc["default_version"].(map[string]any)
	maxVersion, _ := dv["version"].(string)
	if doc["name"] != "OpenStack Ironic API" || dv["id"] != "v1" || dv["min_version"] != "1.1" || dv["status"] != "CURRENT" || !strings.HasPrefix(maxVersion, "1.") {
		t.Errorf("GET / = %s, want Ironic's root document", root.Body)
	}

	// No header means 1.1. A node created at 1.1 is "available" (the
	// pre-1.11 behaviour) and shows as provision_state null at 1.1.
	created := api(t, base, "", http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware"})
	if created.Status != http.StatusCreated {
		t.Fatalf("POST /v1/nodes at 1.1 = HTTP %d %s", created.Status, created.Body)
	}
	for h, want := range map[string]string{
		"X-OpenStack-Ironic-API-Version":         "1.1",
		"X-OpenStack-Ironic-API-Minimum-Version": "1.1",
		"X-OpenStack-Ironic-API-Maximum-Version": maxVersion,
	} {
		if got := created.Header.Get(h); got != want {
			t.Errorf("POST at 1.1: header %s = %q, want %q", h, got, want)
		}
	}
	if id := created.Header.Get("Openstack-Request-Id"); !strings.HasPrefix(id, "req-") || len(id) != len("req-")+36 {
		t.Errorf("Openstack-Request-Id = %q, want req-<uuid>", id)
	}
	node := mustJSON[map[string]any](t, "POST /v1/nodes at 1.1", string(created.Body))
	uuid, _ := node["uuid"].(string)
	if node["provision_state"] != nil {
		t.Errorf("node created at 1.1 shows provision_state %v at 1.1, want null", node["provision_state"])
	}
	old := api(t, base, "1.1", http.MethodGet, "/v1/nodes/"+uuid, nil)
	var keys []string
	for k := range mustJSON[map[string]any](t, "GET node at 1.1", string(old.Body)) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want11 := []string{"chassis_uuid", "console_enabled", "created_at", "driver", "driver_info", "extra",
		"instance_info", "instance_uuid", "last_error", "links", "maintenance", "maintenance_reason",
		"ports", "power_state", "properties", "provision_state", "provision_updated_at", "reservation",
		"target_power_state", "target_provision_state", "updated_at", "uuid"}
	if !slices.Equal(keys, want11) {
		t.Errorf("node fields at 1.1:\n got %v\nwant %v", keys, want11)
	}
	if st := getNode(t, base, uuid)["provision_state"]; st != "available" {
		t.Errorf("node created at 1.1 is %v at latest, want available", st)
	}

	// A provision request answers 202 with an empty body and a Location.
	put := api(t, base, "1.78", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", map[string]any{"target": "manage"})
	if put.Status != http.StatusAccepted || len(put.Body) != 0 {
		t.Errorf("PUT states/provision = HTTP %d %q, want 202 and no body", put.Status, put.Body)
	}
	if loc := put.Header.Get("Location"); loc != base+"/v1/nodes/"+uuid+"/states" {
		t.Errorf("PUT states/provision Location = %q, want %s/v1/nodes/%s/states", loc, base, uuid)
	}
	if got := put.Header.Get("X-OpenStack-Ironic-API-Version"); got != "1.78" {
		t.Errorf("PUT at 1.78: X-OpenStack-Ironic-API-Version = %q", got)
	}
	waitState(t, base, uuid, "manageable")

	states := api(t, base, "latest", http.MethodGet, "/v1/nodes/"+uuid+"/states", nil)
	var stateKeys []string
	for k := range mustJSON[map[string]any](t, "GET states", string(states.Body)) {
		stateKeys = append(stateKeys, k)
	}
	slices.Sort(stateKeys)
	wantStates := []string{"boot_mode", "console_enabled", "last_error", "power_state", "provision_state",
		"provision_updated_at", "raid_config", "secure_boot", "target_power_state", "target_provision_state",
		"target_raid_config"}
	if !slices.Equal(stateKeys, wantStates) {
		t.Errorf("GET /v1/nodes/{id}/states fields:\n got %v\nwant %v", stateKeys, wantStates)
	}

	// An unsupported microversion is a 406 naming the supported range, in
	// the webob error document Ironic answers version errors with.
	bad := api(t, base, "1.999", http.MethodGet, "/v1/nodes", nil)
	if bad.Status != http.StatusNotAcceptable {
		t.Fatalf("GET at 1.999 = HTTP %d %s, want 406", bad.Status, bad.Body)
	}
	wantMsg := "Version 1.999 was requested but the minor version is not supported by this service. The supported version range is: [1.1, " + maxVersion + "]."
	if msg, key := errorDoc(t, bad.Body); msg != wantMsg || key != "description" {
		t.Errorf("GET at 1.999: %s %q\nwant description %q", key, msg, wantMsg)
	}
	for h, want := range map[string]string{
		"X-OpenStack-Ironic-API-Minimum-Version": "1.1",
		"X-OpenStack-Ironic-API-Maximum-Version": maxVersion,
	} {
		if got := bad.Header.Get(h); got != want {
			t.Errorf("GET at 1.999: header %s = %q, want %q", h, got, want)
		}
	}
}
