package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/store"
)

func TestMicroversionNegotiation(t *testing.T) {
	e := newEnv(t)
	rangeText := "The supported version range is: [1.1, 1.115]."
	tests := []struct {
		name    string
		headers []string
		status  int
		version string // effective version; "" when refused
		msg     string
	}{
		{"no header is the minimum", nil, 200, "1.1", ""},
		{"latest is the maximum", []string{"X-OpenStack-Ironic-API-Version: latest"}, 200, "1.115", ""},
		{"latest ignores case", []string{"X-OpenStack-Ironic-API-Version: LaTeSt"}, 200, "1.115", ""},
		{"maximum", []string{"X-OpenStack-Ironic-API-Version: 1.115"}, 200, "1.115", ""},
		{"Metal3 fallbacks", []string{"OpenStack-API-Version: baremetal 1.95"}, 200, "1.95", ""},
		{"explicit minor", []string{"X-OpenStack-Ironic-API-Version: 1.78"}, 200, "1.78", ""},
		{"leading zeros", []string{"X-OpenStack-Ironic-API-Version: 1.050"}, 200, "1.50", ""},
		{"standard header", []string{"OpenStack-API-Version: baremetal 1.50"}, 200, "1.50", ""},
		{"standard header latest", []string{"OpenStack-API-Version: baremetal latest"}, 200, "1.115", ""},
		{"standard header wins", []string{"OpenStack-API-Version: baremetal 1.40", "X-OpenStack-Ironic-API-Version: 1.20"}, 200, "1.40", ""},
		{"other service ignored", []string{"OpenStack-API-Version: compute 2.1", "X-OpenStack-Ironic-API-Version: 1.20"}, 200, "1.20", ""},
		{"list of services", []string{"OpenStack-API-Version: compute 2.1, baremetal 1.31"}, 200, "1.31", ""},
		{"1.0 is too old", []string{"X-OpenStack-Ironic-API-Version: 1.0"}, 406, "",
			"Version 1.0 was requested but the minor version is not supported by this service. " + rangeText},
		{"1.200 is too new", []string{"X-OpenStack-Ironic-API-Version: 1.200"}, 406, "",
			"Version 1.200 was requested but the minor version is not supported by this service. " + rangeText},
		{"1.116 is too new", []string{"OpenStack-API-Version: baremetal 1.116"}, 406, "",
			"Version 1.116 was requested but the minor version is not supported by this service. " + rangeText},
		{"huge minor", []string{"X-OpenStack-Ironic-API-Version: 1.99999999999999999999999"}, 406, "",
			"Version 1.99999999999999999999999 was requested but the minor version is not supported by this service. " + rangeText},
		{"other major", []string{"X-OpenStack-Ironic-API-Version: 2.1"}, 406, "",
			"Mutually exclusive versions requested. Version 2.1 requested but not supported by this service. " + rangeText},
		{"garbage", []string{"X-OpenStack-Ironic-API-Version: garbage"}, 406, "", "Invalid value for X-OpenStack-Ironic-API-Version header"},
		{"major only", []string{"X-OpenStack-Ironic-API-Version: 1"}, 406, "", "Invalid value for X-OpenStack-Ironic-API-Version header"},
		{"three parts", []string{"X-OpenStack-Ironic-API-Version: 1.2.3"}, 406, "", "Invalid value for X-OpenStack-Ironic-API-Version header"},
		{"standard header garbage", []string{"OpenStack-API-Version: baremetal one.two"}, 406, "", "Invalid value for X-OpenStack-Ironic-API-Version header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/nodes", "", tc.headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if got := rec.Header().Get(hdrLegacyVersion); got != tc.version {
				t.Errorf("version header %q, want %q", got, tc.version)
			}
			if tc.version != "" {
				if got := rec.Header().Get(hdrStdVersion); got != "baremetal "+tc.version {
					t.Errorf("OpenStack-API-Version %q", got)
				}
			}
			if tc.msg != "" {
				code, msg := faultOf(t, rec)
				if code != "Client" || msg != tc.msg {
					t.Errorf("fault %s %q, want %q", code, msg, tc.msg)
				}
			}
		})
	}
}

var reqIDRe = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestHeadersOnEveryResponse(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("h1"))
	tests := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		versioned                bool
	}{
		{"root", "GET", "/", "", nil, 200, true},
		{"v1", "GET", "/v1", "", []string{latest}, 200, true},
		{"node", "GET", "/v1/nodes/" + n.UUID, "", []string{latest}, 200, true},
		{"unknown route", "GET", "/v1/bogus", "", []string{latest}, 404, true},
		{"wrong method", "PATCH", "/v1/nodes/" + n.UUID + "/states", "", []string{latest}, 405, true},
		{"bad body", "POST", "/v1/nodes", "{bad", []string{latest}, 400, true},
		{"unknown node", "GET", "/v1/nodes/nosuch", "", []string{latest}, 404, true},
		{"verb too new", "PUT", "/v1/nodes/" + n.UUID + "/states/provision", `{"target":"manage"}`, nil, 406, true},
		{"accepted", "PUT", "/v1/nodes/" + n.UUID + "/maintenance", "", []string{latest}, 202, true},
		{"refused version", "GET", "/v1/nodes", "", []string{"X-OpenStack-Ironic-API-Version: 1.0"}, 406, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, tc.headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			h := rec.Header()
			if h.Get(hdrMinVersion) != "1.1" || h.Get(hdrMaxVersion) != "1.115" {
				t.Errorf("min/max headers %q %q", h.Get(hdrMinVersion), h.Get(hdrMaxVersion))
			}
			if !reqIDRe.MatchString(h.Get(hdrRequestID)) || h.Get(hdrXRequestID) != h.Get(hdrRequestID) {
				t.Errorf("request ids %q %q", h.Get(hdrRequestID), h.Get(hdrXRequestID))
			}
			if !strings.Contains(h.Get("Vary"), "OpenStack-API-Version") || !strings.Contains(h.Get("Vary"), hdrLegacyVersion) {
				t.Errorf("Vary %q", h.Get("Vary"))
			}
			if tc.versioned && (h.Get(hdrLegacyVersion) == "" || !strings.HasPrefix(h.Get(hdrStdVersion), "baremetal 1.")) {
				t.Errorf("version headers missing: %v", h)
			}
			if rec.Code >= 400 {
				faultOf(t, rec)
				if ct := h.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"invalid", fault.New(fault.Invalid, "bad"), 400, "bad"},
		{"not found", fault.NodeNotFound("x"), 404, "Node x could not be found."},
		{"not allowed", fault.New(fault.NotAllowed, "no"), 405, "no"},
		{"not acceptable", fault.NotAcceptableVersion(), 406, "Request not acceptable."},
		{"conflict", fault.NodeLocked("u", "h"), 409, "Node u is locked by host h, please retry after the current operation is completed."},
		{"too large", fault.New(fault.TooLarge, "big"), 413, "big"},
		{"unsupported", fault.New(fault.Unsupported, "type"), 415, "type"},
		{"unavailable", fault.New(fault.Unavailable, "busy"), 503, "busy"},
		{"wrapped fault", fmt.Errorf("ctx: %w", fault.New(fault.Invalid, "inner")), 400, "inner"},
		{"store not found", fmt.Errorf("get: %w", store.ErrNotFound), 404, "Resource could not be found."},
		{"store locked", &store.LockedError{Node: "u", Holder: "h"}, 409, "Node u is locked by host h, please retry after the current operation is completed."},
		{"store duplicate mac", fmt.Errorf("x: %w", &store.DuplicateError{Field: "address", Value: "52:54:00:aa:bb:01"}), 409, "A port with MAC address 52:54:00:aa:bb:01 already exists."},
		{"internal", errors.New("database is on fire"), 500, ""},
		{"unknown kind", &fault.Error{Kind: 99, Msg: "secret"}, 500, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, msg, _ := classify(tc.err)
			if status != tc.status || msg != tc.msg {
				t.Errorf("classify = %d %q, want %d %q", status, msg, tc.status, tc.msg)
			}
		})
	}
}

func TestInternalErrorsAreNotEchoed(t *testing.T) {
	e := newEnv(t)
	e.cond.validateErr = errors.New("SELECT password FROM secrets failed")
	n := e.mustNode(nodeFixture("v"))
	rec := e.do("GET", "/v1/nodes/"+n.UUID+"/validate", "", latest)
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	code, msg := faultOf(t, rec)
	if code != "Server" || strings.Contains(msg, "password") || !strings.Contains(msg, rec.Header().Get(hdrRequestID)) {
		t.Errorf("fault %s %q", code, msg)
	}
}

func TestErrorBodyIsPythonJSON(t *testing.T) {
	body := string(errorBody(404, `Node "x/ü" could not be found.`))
	want := `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node \\\"x/\\u00fc\\\" could not be found.\", \"debuginfo\": null}"}`
	if body != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
	if !strings.Contains(string(errorBody(503, "busy")), `\"faultcode\": \"Server\"`) {
		t.Error("5xx must be a Server fault")
	}
}
