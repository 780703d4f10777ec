package scale

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestDiagnosisAcrossRoles: a node failed by a conductor-only process is
// diagnosed there and its diagnosis read through an API-only process (the
// database holds it).
func TestDiagnosisAcrossRoles(t *testing.T) {
	db := pg.URL(t)
	testbin.ServeOn(t, anvilBin, db, "diag-conductor", "--role", "conductor")
	api, _ := testbin.ServeOn(t, anvilBin, db, "diag-api", "--role", "api")
	n := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes", map[string]any{
		"driver": "fake-hardware", "driver_info": map[string]any{"fake_fail": "verify", "ipmi_password": "split-role-secret"}}).JSON(t)
	node := n["uuid"].(string)
	testbin.MustCall(t, http.StatusNotFound, http.MethodGet, api+"/v1/nodes/"+node+"/diagnosis", nil)
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "manage"})
	// The failed verification goes back to enroll: the diagnosis is the
	// sign it happened.
	var d map[string]any
	for deadline := time.Now().Add(testbin.ReadyTimeout); ; {
		r := testbin.Call(t, "latest", http.MethodGet, api+"/v1/nodes/"+node+"/diagnosis", nil)
		if r.Status == http.StatusOK {
			d = r.JSON(t)
			break
		}
		if r.Status != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("diagnosis through the API process: HTTP %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	if d["class"] == "" || d["provision_state"] != "enroll" || d["from_state"] != "verifying" {
		t.Fatalf("diagnosis: %v", d)
	}
	if b, _ := json.Marshal(d); strings.Contains(string(b), "split-role-secret") {
		t.Fatalf("the BMC password is in the diagnosis: %s", b)
	}
}
