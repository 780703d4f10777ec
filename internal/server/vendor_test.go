package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// call sends a request at the latest version and returns the status and,
// for an error, Ironic's faultstring (else the body).
func (s *served) call(method, path, body string) (int, string) {
	s.t.Helper()
	return s.callAt(method, path, body, "latest")
}

// callAt is call at microversion v.
func (s *served) callAt(method, path, body, v string) (int, string) {
	s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.base+path, r)
	req.Header.Set("X-OpenStack-Ironic-API-Version", v)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var outer struct {
		ErrorMessage string `json:"error_message"`
	}
	if resp.StatusCode >= 400 && json.Unmarshal(raw, &outer) == nil {
		var inner struct {
			Faultstring string `json:"faultstring"`
		}
		if json.Unmarshal([]byte(outer.ErrorMessage), &inner) == nil {
			return resp.StatusCode, inner.Faultstring
		}
	}
	return resp.StatusCode, string(raw)
}

// vendorEnv is `anvil serve` with one emulated machine enrolled as a
// redfish node (power sync every 50 ms).
type vendorEnv struct {
	*served
	emu  *bmcemu.Emulator
	m    *bmcemu.Machine
	node string
	gc   *gophercloud.ServiceClient
}

func newVendorEnv(t *testing.T) *vendorEnv {
	t.Helper()
	emu, err := bmcemu.Start(t.Context(), bmcemu.Config{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	s := serveWith(t, func(c *Config) {
		c.Conductor.SyncPowerStateInterval = 50 * time.Millisecond
		// The fast power sync holds the node now and then: calls wait
		// for it as with `serve`'s defaults (Ironic's lock retries).
		c.Conductor.LockRetries, c.Conductor.LockRetryInterval = 3, 200*time.Millisecond
	})
	nf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		t.Fatal(err)
	}
	di, _ := json.Marshal(nf.Nodes[0].DriverInfo)
	n := s.do("POST", "/v1/nodes", `{"name":"rf-0","driver":"redfish","driver_info":`+string(di)+`}`, 201)
	gc, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: s.base + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	gc.Microversion = "1.110"
	return &vendorEnv{served: s, emu: emu, m: emu.Machines()[0], node: n["uuid"].(string), gc: gc}
}

// TestRedfishSubscriptionsGophercloud creates, reads and deletes BMC event
// subscriptions through gophercloud's vendor passthru calls (what Metal3's
// BMCEventSubscription controller sends), checked against the emulator's
// EventService.
func TestRedfishSubscriptionsGophercloud(t *testing.T) {
	e := newVendorEnv(t)
	ctx := t.Context()
	methods, err := nodes.ListVendorPassthruMethods(ctx, e.gc, e.node).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"create_subscription", "delete_subscription", "get_all_subscriptions", "get_subscription", "eject_vmedia"} {
		if _, ok := methods[name]; !ok {
			t.Errorf("methods lack %s: %v", name, methods)
		}
	}
	typed, err := nodes.GetVendorPassthruMethods(ctx, e.gc, e.node).Extract()
	if err != nil || len(typed.GetAllSubscriptions.HTTPMethods) != 1 || typed.GetAllSubscriptions.HTTPMethods[0] != "GET" ||
		typed.DeleteSubscription.HTTPMethods[0] != "DELETE" || typed.GetSubscription.Async {
		t.Errorf("typed methods: %+v %v", typed, err)
	}
	if m := methods["create_subscription"]; m.Async || !m.RequireExclusiveLock || len(m.HTTPMethods) != 1 || m.HTTPMethods[0] != "POST" {
		t.Errorf("create_subscription = %+v", m)
	}

	sub, err := nodes.CreateSubscription(ctx, e.gc, e.node, nodes.CallVendorPassthruOpts{Method: "create_subscription"},
		nodes.CreateSubscriptionOpts{Destination: "https://events.example:8443/hook", Context: "bmo-ctx",
			HttpHeaders: []map[string]string{{"Authorization": "Bearer s3cret-token"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if sub.Id == "" || sub.Destination != "https://events.example:8443/hook" || sub.Context != "bmo-ctx" ||
		sub.Protocol != "Redfish" || len(sub.EventTypes) != 1 || sub.EventTypes[0] != "Alert" {
		t.Errorf("created %+v", sub)
	}
	bmc := e.emu.Subscriptions()
	if len(bmc) != 1 || bmc[0].ID != sub.Id || bmc[0].Context != "bmo-ctx" || len(bmc[0].HTTPHeaders) != 1 ||
		bmc[0].HTTPHeaders[0]["Authorization"] != "Bearer s3cret-token" {
		t.Fatalf("BMC subscriptions = %+v", bmc)
	}

	all, err := nodes.GetAllSubscriptions(ctx, e.gc, e.node, nodes.CallVendorPassthruOpts{Method: "get_all_subscriptions"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if all.MembersCount != 1 || len(all.Members) != 1 || !strings.HasSuffix(all.Members[0]["@odata.id"], "/Subscriptions/"+sub.Id) {
		t.Errorf("all subscriptions = %+v", all)
	}
	one, err := nodes.GetSubscription(ctx, e.gc, e.node, nodes.CallVendorPassthruOpts{Method: "get_subscription"},
		nodes.GetSubscriptionOpts{Id: sub.Id}).Extract()
	if err != nil || one.Id != sub.Id || one.Destination != sub.Destination {
		t.Errorf("get_subscription = %+v, %v", one, err)
	}
	if code, body := e.call("GET", "/v1/nodes/"+e.node+"/vendor_passthru?method=get_subscription", `{"id":"1"}`); strings.Contains(body, "s3cret") || code != 200 {
		t.Errorf("get_subscription answered %d %s", code, body)
	}

	if err := nodes.DeleteSubscription(ctx, e.gc, e.node, nodes.CallVendorPassthruOpts{Method: "delete_subscription"},
		nodes.DeleteSubscriptionOpts{Id: sub.Id}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if bmc := e.emu.Subscriptions(); len(bmc) != 0 {
		t.Errorf("after delete the BMC has %+v", bmc)
	}
	code, msg := e.call("DELETE", "/v1/nodes/"+e.node+"/vendor_passthru?method=delete_subscription", `{"id":"`+sub.Id+`"}`)
	if code != 404 || !strings.HasPrefix(msg, "Redfish exception occurred. Error: Redfish delete_subscription failed for subscription "+sub.Id+" on node "+e.node) {
		t.Errorf("second delete: %d %s", code, msg)
	}
}

// TestVendorPassthruBadInput: Ironic's errors for bad vendor passthru
// calls, and nothing reaches the BMC.
func TestVendorPassthruBadInput(t *testing.T) {
	e := newVendorEnv(t)
	vp := "/v1/nodes/" + e.node + "/vendor_passthru"
	tests := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"no method", "POST", vp, `{}`, 400, "Missing mandatory parameter: method"},
		{"unknown method", "POST", vp + "?method=frobnicate", `{}`, 400, "No handler for method frobnicate"},
		{"wrong HTTP method", "GET", vp + "?method=create_subscription", ``, 400, "The method create_subscription does not support HTTP GET"},
		{"no destination", "POST", vp + "?method=create_subscription", `{}`, 400, "Destination None is not a valid URI"},
		{"bad destination", "POST", vp + "?method=create_subscription", `{"Destination":"not a uri"}`, 400, "Destination not a uri is not a valid URI"},
		{"bad event type", "POST", vp + "?method=create_subscription", `{"Destination":"http://h/x","EventTypes":["Bogus"]}`, 400,
			"EventTypes ['Bogus'] is not a valid value, allowed values {'Alert', 'ResourceAdded', 'ResourceRemoved', 'ResourceUpdated', 'StatusChange'}"},
		{"context not a string", "POST", vp + "?method=create_subscription", `{"Destination":"http://h/x","Context":5}`, 400, "Context 5 is not a valid string"},
		{"headers not a list", "POST", vp + "?method=create_subscription", `{"Destination":"http://h/x","HttpHeaders":{"a":"pw"}}`, 400, "HttpHeaders ****** is not a list of headers"},
		{"delete without id", "DELETE", vp + "?method=delete_subscription", `{}`, 400, "id can't be None"},
		{"delete traversal", "DELETE", vp + "?method=delete_subscription", `{"id":"../../Systems"}`, 400, "Invalid BMC subscription ID value: '../../Systems'"},
		{"get bad id", "GET", vp + "?method=get_subscription", `{"id":"a#b"}`, 400, "Invalid BMC ID value: 'a#b'"},
		{"body not an object", "POST", vp + "?method=create_subscription", `["x"]`, 400, "must be a JSON object"},
		{"bad boot device", "POST", vp + "?method=eject_vmedia", `{"boot_device":"tape"}`, 400, "Boot device tape is not a valid value"},
		{"unknown node", "GET", "/v1/nodes/nope/vendor_passthru/methods", ``, 404, "Node nope could not be found."},
		{"driver methods", "GET", "/v1/drivers/redfish/vendor_passthru/methods", ``, 200, "{}"},
		{"driver call", "POST", "/v1/drivers/redfish/vendor_passthru?method=x", `{}`, 400, "No handler for method x"},
		{"unknown driver", "GET", "/v1/drivers/nope/vendor_passthru/methods", ``, 404, "Could not find the following driver(s) or hardware type(s): nope."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := e.call(tt.method, tt.path, tt.body)
			if code != tt.code || !strings.Contains(msg, tt.msg) {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, code, msg, tt.code, tt.msg)
			}
		})
	}
	if subs := e.emu.Subscriptions(); len(subs) != 0 {
		t.Errorf("bad calls created %+v", subs)
	}
	// no-vendor: no methods, Ironic's "No handler".
	e.do("PATCH", "/v1/nodes/"+e.node, `[{"op":"replace","path":"/vendor_interface","value":"no-vendor"}]`, 200)
	if code, body := e.call("GET", vp+"/methods", ""); code != 200 || body != "{}" {
		t.Errorf("no-vendor methods: %d %s", code, body)
	}
	if code, msg := e.call("POST", vp+"?method=create_subscription", `{"Destination":"http://h/x"}`); code != 400 || msg != "No handler for method create_subscription" {
		t.Errorf("no-vendor call: %d %s", code, msg)
	}
}

// TestFakeVendorPassthru: fake-hardware's vendor interface is Ironic's
// FakeVendorB.
func TestFakeVendorPassthru(t *testing.T) {
	s := serve(t)
	n := s.do("POST", "/v1/nodes", `{"name":"fv","driver":"fake-hardware"}`, 201)["uuid"].(string)
	vp := "/v1/nodes/" + n + "/vendor_passthru"
	for _, tt := range []struct {
		method, body string
		code         int
		want         string
	}{
		{"third_method_sync", `{"bar":"meow"}`, 200, "true"},
		{"third_method_sync", `{"bar":"woof"}`, 200, "false"},
		{"third_method_sync", `{}`, 400, "Parameter 'bar' not passed to method 'third_method_sync'."},
		{"second_method", `{"bar":"kazoo"}`, 202, ""},
		{"fourth_method_shared_lock", `{"bar":"x"}`, 202, ""},
		{"first_method", `{"bar":"x"}`, 400, "No handler for method first_method"},
	} {
		if code, body := s.call("POST", vp+"?method="+tt.method, tt.body); code != tt.code || body != tt.want {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.body, code, body, tt.code, tt.want)
		}
		unlocked(t, s, n) // an asynchronous method holds the node until it is done, as in Ironic
	}
	// python-ironicclient names the method in the path
	if code, body := s.call("POST", vp+"/third_method_sync", `{"bar":"meow"}`); code != 200 || body != "true" {
		t.Errorf("path form: %d %s", code, body)
	}
	if code, body := s.call("POST", "/v1/drivers/fake-hardware/vendor_passthru/x", `{}`); code != 400 || body != "No handler for method x" {
		t.Errorf("driver path form: %d %s", code, body)
	}
	// the same through gophercloud's generic call
	gc, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: s.base + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	gc.Microversion = "1.110"
	res := nodes.CallVendorPassthru(t.Context(), gc, n, http.MethodPost, nodes.VendorPassthruCallOpts{Method: "second_method", Body: map[string]any{"bar": "kazoo"}})
	if res.Err != nil || res.StatusCode != 202 {
		t.Errorf("gophercloud second_method: %d %v", res.StatusCode, res.Err)
	}
	unlocked(t, s, n)
	typed, err := nodes.GetVendorPassthruMethods(t.Context(), gc, n).Extract()
	if err != nil || typed.CreateSubscription.HTTPMethods != nil {
		t.Errorf("typed methods of fake: %+v %v", typed, err)
	}
	var ms map[string]map[string]any
	_, body := s.call("GET", vp+"/methods", "")
	if err := json.Unmarshal([]byte(body), &ms); err != nil || len(ms) != 3 || ms["fourth_method_shared_lock"]["require_exclusive_lock"] != false ||
		ms["second_method"]["async"] != true || ms["third_method_sync"]["description"] != "Test if the value of bar is meow" {
		t.Errorf("fake methods = %s", body)
	}
}

// TestRedfishEjectVmedia: eject_vmedia (asynchronous, 202) ejects the
// emulated BMC's virtual CD.
func TestRedfishEjectVmedia(t *testing.T) {
	e := newVendorEnv(t)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("iso")) }))
	defer img.Close()
	if err := e.emu.InsertMedia(t.Context(), e.m, img.URL+"/boot.iso", true); err != nil {
		t.Fatal(err)
	}
	if !e.m.Status().Media.Inserted {
		t.Fatal("media not inserted")
	}
	if code, body := e.call("POST", "/v1/nodes/"+e.node+"/vendor_passthru?method=eject_vmedia", `{"boot_device":"cd"}`); code != 202 || body != "" {
		t.Fatalf("eject_vmedia: %d %q", code, body)
	}
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for e.m.Status().Media.Inserted {
		if time.Now().After(deadline) {
			t.Fatal("the virtual CD was never ejected")
		}
		<-tick.C
	}
}

// unlocked waits (bounded) until node n holds no lock.
func unlocked(t *testing.T, s *served, n string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for s.do("GET", "/v1/nodes/"+n, "", 200)["reservation"] != nil {
		if time.Now().After(deadline) {
			t.Fatalf("node %s still locked after %s", n, testTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
