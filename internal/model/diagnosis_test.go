package model

import "testing"

func TestBMCCallMergeInto(t *testing.T) {
	fail := BMCCall{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status", Error: "no answer", Kind: "unreachable"}
	// The same kind of failure, worded apart (a local port, a duration).
	again, ok := fail.MergeInto(BMCCall{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status", Error: "no answer from :4000", Kind: "unreachable", Repeated: 2})
	if !ok || again.Repeated != 3 || again.Error != "no answer" {
		t.Fatalf("a repeated failure: %+v %v, want the newest merged with Repeated 3", again, ok)
	}
	other := BMCCall{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status", Error: "completion code 0xc1"}
	if _, ok := other.MergeInto(BMCCall{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status", Error: "completion code 0xc3"}); ok {
		t.Error("unclassified failures with different texts merged")
	}
	for _, prev := range []BMCCall{
		{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power status"},                        // it succeeded then
		{Protocol: "ipmi", BMC: "10.0.0.1:623", Op: "power on", Error: "no answer"},        // another operation
		{Protocol: "ipmi", BMC: "10.0.0.2:623", Op: "power status", Error: "no answer"},    // another BMC
		{Protocol: "redfish", BMC: "10.0.0.1:623", Op: "power status", Error: "no answer"}, // another protocol
	} {
		if _, ok := fail.MergeInto(prev); ok {
			t.Errorf("merged with %+v", prev)
		}
	}
}
