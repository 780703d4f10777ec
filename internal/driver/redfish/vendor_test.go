package redfish_test

import (
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
)

// TestVendorWithoutEventService: sushy-tools links no EventService; the
// subscription methods fail with Ironic's RedfishError text (a 500 to the
// client), never with the password.
func TestVendorWithoutEventService(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: sushyPassword, ContinuousOnly: true, DelayedPower: true})
	rp.loadExchanges(t, sushyRecording)
	srv := rp.start(t)
	b := bmcTarget{d: fastDriver(), address: srv.URL, password: sushyPassword}
	v := b.d.NewVendor()
	task := &driver.Task{Node: b.node(sushyPassword)}
	args := map[string]any{"Destination": "https://hook.example/e"}
	if err := v.ValidateVendor(t.Context(), task, "create_subscription", args); err != nil {
		t.Fatalf("validate: %v", err)
	}
	_, err := v.CallVendor(t.Context(), task, "create_subscription", "POST", args)
	ce, ok := err.(*driver.CallError)
	want := "Redfish exception occurred. Error: Failed to create subscription on node " + task.Node.UUID +
		". Subscription payload: {'Destination': 'https://hook.example/e', 'Protocol': 'Redfish', 'Context': '', 'EventTypes': ['Alert']}. " +
		"Error: The attribute EventService is missing from the resource /redfish/v1/"
	if !ok || ce.NotFound || ce.Msg != want {
		t.Errorf("create_subscription: %v\nwant %s", err, want)
	}
	_, err = v.CallVendor(t.Context(), task, "get_all_subscriptions", "GET", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "Redfish exception occurred. Error: Redfish get_subscriptions failed for node ") ||
		strings.Contains(err.Error(), sushyPassword) {
		t.Errorf("get_all_subscriptions: %v", err)
	}
	// EventTypes are checked against what the BMC offers: here it has no
	// EventService at all, which is the error.
	err = v.ValidateVendor(t.Context(), task, "create_subscription", map[string]any{"Destination": "http://h/x", "EventTypes": []any{"Alert"}})
	if _, ok := err.(*driver.CallError); !ok {
		t.Errorf("validate EventTypes without EventService: %v", err)
	}
}
