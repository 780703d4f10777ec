package api

import (
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

func TestNodeProvision(t *testing.T) {
	tests := []struct {
		name    string
		state   string
		body    string
		version string
		status  int
		msg     string
		after   string
	}{
		{"manage from enroll", "enroll", `{"target":"manage"}`, latest, 202, "", "manageable"},
		{"manage at 1.3", "enroll", `{"target":"manage"}`, at(3), 406, "Request not acceptable.", "enroll"},
		{"manage at 1.4", "enroll", `{"target":"manage"}`, at(4), 202, "", "manageable"},
		{"active is never gated", "available", `{"target":"active"}`, "", 202, "", "active"},
		{"deploy word needs 1.73", "available", `{"target":"deploy"}`, at(72), 406, "Request not acceptable.", "available"},
		{"deploy word", "available", `{"target":"deploy"}`, at(73), 202, "", "active"},
		{"rescue needs 1.38", "active", `{"target":"rescue","rescue_password":"x"}`, at(37), 406, "", "active"},
		{"unhold above 1.85", "clean hold", `{"target":"unhold"}`, at(84), 406, "", "clean hold"},
		{"service needs 1.87", "active", `{"target":"service","service_steps":[{"interface":"raid","step":"x"}]}`, at(86), 406, "", "active"},
		{"invalid transition", "enroll", `{"target":"active"}`, latest, 400, `can not be performed`, "enroll"},
		{"unknown verb goes to the conductor", "enroll", `{"target":"bogus"}`, latest, 400, `The requested action "bogus"`, "enroll"},
		{"missing target", "enroll", `{}`, latest, 400, "Missing mandatory parameter: target", "enroll"},
		{"null body", "enroll", `null`, latest, 400, "Missing mandatory parameter: target", "enroll"},
		{"array body", "enroll", `[]`, latest, 400, "Missing mandatory parameter: target", "enroll"},
		{"target not a string", "enroll", `{"target":5}`, latest, 400, "Expected string for target: 5", "enroll"},
		{"unknown argument", "enroll", `{"target":"manage","foo":1}`, latest, 400, "Unexpected arguments: foo", "enroll"},
		{"configdrive wrong type", "available", `{"target":"active","configdrive":5}`, latest, 400,
			"Expected types <class 'NoneType'>, <class 'dict'>, <class 'str'> for configdrive: 5", "available"},
		{"configdrive object before 1.56", "available", `{"target":"active","configdrive":{"meta_data":{}}}`, at(55), 400,
			"Providing a JSON object for configdrive is only supported starting with API version 1.56", "available"},
		{"configdrive vendor_data before 1.59", "available", `{"target":"active","configdrive":{"vendor_data":{}}}`, at(58), 400,
			"Providing vendor_data in configdrive is only supported starting with API version 1.59", "available"},
		{"configdrive garbage", "available", `{"target":"active","configdrive":"not base64!"}`, latest, 400,
			"Invalid configdrive format: it is neither a JSON, nor a URL, nor a base64 string", "available"},
		{"configdrive url", "available", `{"target":"active","configdrive":"http://x/cd.iso"}`, latest, 202, "", "active"},
		{"clean_steps wrong type", "manageable", `{"target":"clean","clean_steps":{}}`, latest, 400,
			"Expected types <class 'NoneType'>, <class 'list'> for clean_steps: {}", "manageable"},
		{"clean step not an object", "manageable", `{"target":"clean","clean_steps":[1]}`, latest, 400, "Invalid clean_steps: 1 is not of type 'object'", "manageable"},
		{"deploy_steps before 1.69", "available", `{"target":"active","deploy_steps":[{"interface":"deploy","step":"x","args":{},"priority":1}]}`, at(68), 406,
			"Request not acceptable. The minimal required API version should be 1.69", "available"},
		{"rescue_password wrong type", "active", `{"target":"rescue","rescue_password":5}`, latest, 400, "Expected string for rescue_password: 5", "active"},
		{"disable_ramdisk wrong type", "manageable", `{"target":"clean","disable_ramdisk":"maybe"}`, latest, 400, "Invalid disable_ramdisk", "manageable"},
		{"disable_ramdisk before 1.70", "manageable", `{"target":"clean","clean_steps":[{"interface":"deploy","step":"x"}],"disable_ramdisk":true}`, at(69), 406,
			"disable_ramdisk is not acceptable in this API version", "manageable"},
		{"disable_ramdisk with manage", "enroll", `{"target":"manage","disable_ramdisk":true}`, latest, 400,
			"disable_ramdisk is supported only with manual cleaning or servicing", "enroll"},
		{"runbook before 1.92", "manageable", `{"target":"clean","runbook":"rb"}`, at(91), 406, "Request not acceptable.", "manageable"},
		{"unknown runbook from 1.92", "manageable", `{"target":"clean","runbook":"rb"}`, at(92), 404, "Runbook rb could not be found.", "manageable"},
		{"query parameters count", "enroll", ``, latest, 202, "", "manageable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			n := e.mustNode(&model.Node{Name: "p", ProvisionState: tc.state})
			var headers []string
			if tc.version != "" {
				headers = append(headers, tc.version)
			}
			path := "/v1/nodes/" + n.UUID + "/states/provision"
			if tc.body == "" {
				path += "?target=manage"
			}
			rec := e.do("PUT", path, tc.body, headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code == 202 {
				if rec.Body.Len() != 0 || rec.Header().Get("Location") != "http://"+testHost+"/v1/nodes/"+n.UUID+"/states" {
					t.Errorf("202 body %q Location %q", rec.Body.String(), rec.Header().Get("Location"))
				}
			} else if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q, want %q", msg, tc.msg)
			}
			got, _ := e.st.Nodes().GetNode(context.Background(), n.UUID)
			if got.ProvisionState != tc.after {
				t.Errorf("state %q, want %q", got.ProvisionState, tc.after)
			}
		})
	}
}

func TestProvisionRequestReachesConductor(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "r", ProvisionState: "available"})
	body := `{"target":"active","configdrive":{"meta_data":{"a":1}},"deploy_steps":[{"interface":"deploy","step":"s","args":{},"priority":5}]}`
	if rec := e.do("PUT", "/v1/nodes/r/states/provision", body, latest); rec.Code != 202 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	req := e.cond.lastProvision()
	if req.Target != "active" || req.Minor != MaxMinor || len(req.DeploySteps) != 1 || req.ConfigDrive == nil {
		t.Errorf("request %+v", req)
	}
	if req.DeploySteps[0]["priority"] != float64(5) {
		t.Errorf("step %v", req.DeploySteps[0])
	}
	_ = n
}

func TestNodePower(t *testing.T) {
	tests := []struct {
		name, body, version string
		status              int
		msg                 string
	}{
		{"power on", `{"target":"power on"}`, latest, 202, ""},
		{"soft off", `{"target":"soft power off","timeout":300}`, latest, 202, ""},
		{"float timeout truncates", `{"target":"power on","timeout":2.5}`, latest, 202, ""},
		{"soft before 1.27", `{"target":"soft rebooting"}`, at(26), 406, "Request not acceptable."},
		{"timeout before 1.27", `{"target":"power on","timeout":5}`, at(26), 406, "Request not acceptable."},
		{"zero timeout", `{"target":"power on","timeout":0}`, latest, 400, "timeout has to be positive integer"},
		{"bad timeout", `{"target":"power on","timeout":"abc"}`, latest, 400, "Expected an integer for timeout: abc"},
		{"list timeout", `{"target":"power on","timeout":[1]}`, latest, 400, "Expected an integer for timeout: [1]"},
		{"missing target", `{"timeout":5}`, latest, 400, "Missing mandatory parameter: target"},
		{"bogus target", `{"target":"bogus"}`, latest, 400, `The requested action "bogus"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			n := e.mustNode(&model.Node{Name: "pw", ProvisionState: "manageable", PowerState: "power off"})
			rec := e.do("PUT", "/v1/nodes/pw/states/power", tc.body, tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code == 202 && rec.Header().Get("Location") != "http://"+testHost+"/v1/nodes/pw/states" {
				t.Errorf("Location %q", rec.Header().Get("Location"))
			}
			if rec.Code != 202 {
				if _, msg := faultOf(t, rec); !strings.Contains(msg, tc.msg) {
					t.Errorf("message %q, want %q", msg, tc.msg)
				}
			}
			_ = n
		})
	}
}

func TestNodeStatesAndManagement(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "s", ProvisionState: "inspect wait"})
	e.mustNode(&model.Node{Name: "bad-knob", DriverInfo: model.JSON{"fake_power_delay": "soon"}})
	tests := []struct {
		name, method, path, body, version string
		status                            int
		check                             func(t *testing.T, m map[string]any)
	}{
		{"states at latest", "GET", "/v1/nodes/s/states", "", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m) != 11 || m["provision_state"] != "inspect wait" {
				t.Errorf("%v", m)
			}
		}},
		{"states at 1.38", "GET", "/v1/nodes/s/states", "", at(38), 200, func(t *testing.T, m map[string]any) {
			if len(m) != 9 || m["provision_state"] != "inspecting" {
				t.Errorf("%v", m)
			}
		}},
		{"states at 1.11", "GET", "/v1/nodes/" + n.UUID + "/states", "", at(11), 200, func(t *testing.T, m map[string]any) {
			if len(m) != 7 {
				t.Errorf("%v", m)
			}
		}},
		{"maintenance on", "PUT", "/v1/nodes/s/maintenance", `{"reason":"disk"}`, latest, 202, nil},
		{"maintenance bad reason", "PUT", "/v1/nodes/s/maintenance", `{"reason":5}`, latest, 400, nil},
		{"maintenance extra arg", "PUT", "/v1/nodes/s/maintenance", `{"reason":"x","foo":1}`, latest, 400, nil},
		{"maintenance off", "DELETE", "/v1/nodes/s/maintenance", "", latest, 202, nil},
		{"maintenance unknown node", "PUT", "/v1/nodes/ghost/maintenance", "", latest, 404, nil},
		{"validate", "GET", "/v1/nodes/s/validate", "", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m) != 12 || m["power"].(map[string]any)["result"] != true || m["rescue"].(map[string]any)["reason"] != nil {
				t.Errorf("%v", m)
			}
		}},
		{"validate failure", "GET", "/v1/nodes/bad-knob/validate", "", latest, 200, func(t *testing.T, m map[string]any) {
			p := m["power"].(map[string]any)
			if r, _ := p["reason"].(string); p["result"] != false || !strings.Contains(r, "fake_power_delay") {
				t.Errorf("%v", m)
			}
		}},
		{"validate by query", "GET", "/v1/nodes/validate?node=s", "", latest, 200, nil},
		{"validate by query name at 1.1", "GET", "/v1/nodes/validate?node=s", "", "", 406, nil},
		{"boot device", "GET", "/v1/nodes/s/management/boot_device", "", latest, 200, func(t *testing.T, m map[string]any) {
			if m["boot_device"] != "disk" || m["persistent"] != true { // fake-hardware's default
				t.Errorf("%v", m)
			}
		}},
		{"set boot device", "PUT", "/v1/nodes/s/management/boot_device", `{"boot_device":"pxe","persistent":false}`, latest, 204, nil},
		{"boot device after set", "GET", "/v1/nodes/s/management/boot_device", "", latest, 200, func(t *testing.T, m map[string]any) {
			if m["boot_device"] != "pxe" || m["persistent"] != false {
				t.Errorf("%v", m)
			}
		}},
		{"set boot device missing", "PUT", "/v1/nodes/s/management/boot_device", `{"persistent":true}`, latest, 400, nil},
		{"set boot device bad bool", "PUT", "/v1/nodes/s/management/boot_device", `{"boot_device":"pxe","persistent":"maybe"}`, latest, 400, nil},
		{"set boot device refused", "PUT", "/v1/nodes/s/management/boot_device", `{"boot_device":"floppy"}`, latest, 400, nil},
		{"supported", "GET", "/v1/nodes/s/management/boot_device/supported", "", latest, 200, func(t *testing.T, m map[string]any) {
			if len(m["supported_boot_devices"].([]any)) != 2 {
				t.Errorf("%v", m)
			}
		}},
		{"wrong method", "POST", "/v1/nodes/s/states", "", latest, 405, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code >= 400 {
				faultOf(t, rec)
			}
			if tc.check != nil {
				tc.check(t, decode(t, rec))
			}
		})
	}
	got, _ := e.st.Nodes().GetNode(context.Background(), n.UUID)
	if got.Maintenance || got.MaintenanceReason != "" {
		t.Errorf("maintenance not cleared: %+v", got)
	}
}

func TestNodeHistory(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "h", ProvisionState: "enroll"})
	long := strings.Repeat("x", 300)
	for i := range 5 {
		ev := &model.HistoryEvent{NodeUUID: n.UUID, Severity: "INFO", Event: long, EventType: "provisioning"}
		if i == 0 {
			ev.Severity = "ERROR"
		}
		_ = e.st.Nodes().AddHistory(context.Background(), ev, 0)
		e.clock.Advance(1e9)
	}
	events, _ := e.st.Nodes().ListHistory(context.Background(), n.UUID)
	tests := []struct {
		name, path, version string
		status              int
		check               func(t *testing.T, m map[string]any)
	}{
		{"list", "/v1/nodes/h/history", latest, 200, func(t *testing.T, m map[string]any) {
			h := m["history"].([]any)
			first := h[0].(map[string]any)
			if len(h) != 5 || len(first) != 5 || len(first["event"].(string)) != 254 || first["severity"] != "ERROR" {
				t.Errorf("%v", first)
			}
		}},
		{"detail", "/v1/nodes/h/history?detail=True", latest, 200, func(t *testing.T, m map[string]any) {
			first := m["history"].([]any)[0].(map[string]any)
			if first["event"] != long || first["event_type"] != "provisioning" || first["conductor"] != nil {
				t.Errorf("%v", first)
			}
		}},
		{"page", "/v1/nodes/h/history?limit=2&sort_dir=desc", latest, 200, func(t *testing.T, m map[string]any) {
			h := m["history"].([]any)
			if len(h) != 2 || h[0].(map[string]any)["uuid"] != events[4].UUID || m["next"] == nil {
				t.Errorf("%v", m)
			}
		}},
		{"marker", "/v1/nodes/h/history?marker=" + events[3].UUID, latest, 200, func(t *testing.T, m map[string]any) {
			if h := m["history"].([]any); len(h) != 1 || h[0].(map[string]any)["uuid"] != events[4].UUID {
				t.Errorf("%v", m)
			}
		}},
		{"one", "/v1/nodes/h/history/" + events[2].UUID, latest, 200, func(t *testing.T, m map[string]any) {
			if m["uuid"] != events[2].UUID || m["event"] != long {
				t.Errorf("%v", m)
			}
		}},
		{"one unknown", "/v1/nodes/h/history/0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", latest, 404, nil},
		{"before 1.78", "/v1/nodes/h/history", at(77), 404, nil},
		{"bad marker", "/v1/nodes/h/history?marker=x", latest, 400, nil},
		{"unknown marker", "/v1/nodes/h/history?marker=0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", latest, 404, nil},
		{"bad sort key", "/v1/nodes/h/history?sort_key=bogus", latest, 400, nil},
		{"unknown node", "/v1/nodes/ghost/history", latest, 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", tc.version)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if tc.check != nil {
				tc.check(t, decode(t, rec))
			}
		})
	}
}
