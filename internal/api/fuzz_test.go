package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// FuzzParseJSON: the body decoder never panics, refuses with client
// errors only, and never hands back a value nested deeper than the cap.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{``, `{}`, `[]`, `{"driver":"fake-hardware"}`, `[{"op":"add","path":"/a","value":1}]`,
		`{bad`, `{"a":"\ud800"}`, strings.Repeat("[", 30), `"\u0000"`, `1e999`, `{"a":1} x`, "\xff\xfe",
		`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`, `[` + strings.Repeat(`{"a":`, 24) + `1` + strings.Repeat(`}`, 24) + `]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := parseJSON(body)
		if err != nil {
			if k := fault.KindOf(err); k != fault.Invalid {
				t.Fatalf("non-client error %v (kind %d)", err, k)
			}
			return
		}
		if d := depthOf(v); d > maxJSONDepth {
			t.Fatalf("accepted depth %d", d)
		}
		_ = pyrepr.Repr(v)
	})
}

func depthOf(v any) int {
	switch x := v.(type) {
	case map[string]any:
		d := 0
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		d := 0
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// FuzzNegotiate: the version parser never panics and either picks a
// version in range or refuses with 406.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "1.1", "1.89", "1.90", "latest", "LATEST", "1.0", "2.1", "1", "1.2.3", "garbage",
		" 1.5 ", "+1.+5", "-1.5", "1.-5", "1.99999999999999999999999", "1.٣", "baremetal 1.5", "1.5,1.6", "1.0x10"} {
		f.Add(s, "")
		f.Add("", "baremetal "+s)
	}
	f.Add("1.5", "compute 2.1, baremetal 1.40")
	f.Fuzz(func(t *testing.T, legacy, std string) {
		h := http.Header{}
		if legacy != "" {
			h.Set(hdrLegacyVersion, legacy)
		}
		if std != "" {
			h.Set(hdrStdVersion, std)
		}
		minor, err := negotiate(h)
		if err != nil {
			if fault.KindOf(err) != fault.NotAcceptable {
				t.Fatalf("kind %d: %v", fault.KindOf(err), err)
			}
			return
		}
		if minor < MinMinor || minor > MaxMinor {
			t.Fatalf("minor %d out of range", minor)
		}
	})
}

// FuzzApplyPatch: parsing and applying a JSON patch to a node document
// never panics and fails with client errors only.
func FuzzApplyPatch(f *testing.F) {
	for _, s := range []string{`[]`, `[{"op":"add","path":"/extra/a","value":1}]`, `[{"op":"remove","path":"/extra"}]`,
		`[{"op":"replace","path":"/driver_info/ipmi_password","value":"x"}]`, `[{"op":"add","path":"/extra/a/b","value":1}]`,
		`[{"op":"add","path":"/properties/l","value":[1,2]},{"op":"add","path":"/properties/l/-","value":3}]`,
		`[{"op":"add","path":"/properties/l/5","value":3}]`, `[{"op":"remove","path":"/driver/x"}]`,
		`[{"op":"add","path":"/foo","value":1}]`, `[{"op":"move","path":"/a","from":"/b"}]`, `{"op":"add"}`,
		`[{"op":"replace","path":"/name"}]`, `[{"op":"add","path":"/extra/~1","value":null}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := parseJSON(body)
		if err != nil {
			return
		}
		ops, err := parsePatch(v, MaxMinor)
		if err != nil {
			if fault.KindOf(err) != fault.Invalid {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		n := nodeFixture("f")
		n.Extra = map[string]any{"k": "v"}
		out, err := applyPatch(t.Context(), nodeDoc(n), ops)
		if err != nil {
			if fault.KindOf(err) != fault.Invalid {
				t.Fatalf("apply: %v", err)
			}
			return
		}
		if out == nil {
			t.Fatal("nil document")
		}
	})
}

// FuzzRequestBodies sends arbitrary bodies to every body-taking route:
// no input may cause a 5xx.
func FuzzRequestBodies(f *testing.F) {
	for i := range bodyEndpoints {
		for _, s := range []string{`{}`, `[]`, `{"target":"manage"}`, `[{"op":"replace","path":"/name","value":"x"}]`,
			`{"driver":"fake-hardware","name":"n"}`, `{"address":"52:54:00:aa:bb:cc","node_uuid":"x"}`,
			`{"traits":["CUSTOM_A","HW_CPU_X86_VMX"]}`, `{"id":"vif-1","port_uuid":"x"}`,
			`[{"op":"replace","path":"/mode","value":"802.3ad"}]`, `{"resource_class":"gpu","traits":["CUSTOM_A"]}`,
			`{"name":"CUSTOM_R","steps":[{"interface":"bios","step":"factory_reset","args":{},"order":"1"}],"public":true}`,
			`[{"op":"replace","path":"/steps/0/order","value":-1},{"op":"add","path":"/owner","value":"p"}]`} {
			f.Add(uint8(i), []byte(s))
		}
	}
	e := newEnv(f)
	n := e.mustNode(nodeFixture("bad-input"))
	if err := e.st.Ports().CreatePortgroup(f.Context(), &model.Portgroup{NodeUUID: n.UUID, Name: "bad-input-pg", Mode: "active-backup"}); err != nil {
		f.Fatal(err)
	}
	// Volume records on a powered-off node, so patches reach the store.
	off := e.mustNode(&model.Node{Name: "bad-input-off", PowerState: "power off"})
	if err := e.st.Volumes().CreateVolumeConnector(f.Context(), &model.VolumeConnector{UUID: badInputConnector, NodeUUID: off.UUID,
		Type: "iqn", ConnectorID: "iqn.fuzz"}); err != nil {
		f.Fatal(err)
	}
	if err := e.st.Volumes().CreateVolumeTarget(f.Context(), &model.VolumeTarget{UUID: badInputTarget, NodeUUID: off.UUID,
		VolumeType: "iscsi", VolumeID: "v"}); err != nil {
		f.Fatal(err)
	}
	for i, ep := range bodyEndpoints {
		if strings.HasPrefix(ep.path, "/v1/volume/") {
			for _, s := range []string{`{"node_uuid":"` + off.UUID + `","type":"iqn","connector_id":"iqn.2"}`,
				`{"node_uuid":"` + off.UUID + `","volume_type":"iscsi","boot_index":1,"volume_id":"v","properties":{"a":1}}`,
				`[{"op":"replace","path":"/boot_index","value":3},{"op":"add","path":"/extra/a","value":[1]}]`,
				`[{"op":"replace","path":"/node_uuid","value":"` + n.UUID + `"}]`, `[{"op":"remove","path":"/type"}]`} {
				f.Add(uint8(i), []byte(s))
			}
		}
	}
	mustRunbook(f, e, `{"name": "CUSTOM_BAD_INPUT", "steps": [`+resetStep+`]}`)
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := bodyEndpoints[int(which)%len(bodyEndpoints)]
		rec := e.with(t).do(ep.method, ep.path, string(body), latest)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", ep.method, ep.path, body, rec.Code, rec.Body.String())
		}
	})
}
