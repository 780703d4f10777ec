package redfish_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// The sushy-tools recording (see testdata/sushy-tools/README.md).
const (
	sushyRecording = "testdata/sushy-tools/exchanges.json"
	sushyUser      = "admin"
	sushyPassword  = "password" // the recording's htpasswd account
	sushyMAC       = "00:5c:52:31:3a:9c"
)

// bmcTarget describes a Redfish BMC for the conformance suite: a node with
// the DEFAULT auth type (no redfish_auth_type), as a user creates it.
type bmcTarget struct {
	d          *redfish.Driver
	address    string
	systemID   string // "" = the BMC's only system
	password   string
	bootDevs   []string
	persistent bool
	inspected  func(t *testing.T, task *driver.Task, err error)
}

func (b bmcTarget) node(password string) *model.Node {
	di := model.JSON{"redfish_address": b.address, "redfish_username": sushyUser, "redfish_password": password}
	if b.systemID != "" {
		di["redfish_system_id"] = b.systemID
	}
	return &model.Node{UUID: "5a1d2d3c-7f1e-4c55-9d0e-0b8c3b7a9e11", Driver: "redfish", DriverInfo: di}
}

func (b bmcTarget) run(t *testing.T) {
	drivertest.Run(t, drivertest.Target{
		Power: b.d, Management: b.d, Inspect: b.d, Inspected: b.inspected,
		Good:           func(*testing.T) *model.Node { return b.node(b.password) },
		BadCredentials: func(*testing.T) *model.Node { return b.node("wrong-password") },
		Unreachable: func(t *testing.T) *model.Node {
			n := b.node(b.password)
			n.DriverInfo["redfish_address"] = "http://" + closedPort(t)
			return n
		},
		Missing: func(*testing.T) (*model.Node, string) {
			n := b.node(b.password)
			delete(n.DriverInfo, "redfish_address")
			return n, "redfish_address"
		},
		Secrets:            []string{b.password, "wrong-password"},
		SoftPower:          true,
		PersistentReadback: b.persistent,
		BootDevices:        b.bootDevs,
		ErrorTimeout:       10 * time.Second,
	})
}

// sushyInspected: sushy-tools' fake systems report no memory size and no
// processors (its fake driver implements neither), so inspection fails as
// Ironic's does, naming the essential properties it could not find, and
// records nothing; the Memory collection's 404 is no longer the failure.
func sushyInspected(t *testing.T, task *driver.Task, err error) {
	want := "Failed to discover the following properties: cpu_arch, memory_mb on node " + task.Node.UUID
	if err == nil || err.Error() != want {
		t.Fatalf("Inspect = %v, want %q", err, want)
	}
	if len(task.Node.Properties) != 0 || len(task.Ports) != 0 {
		t.Errorf("failed inspection recorded properties %v, ports %v", task.Node.Properties, task.Ports)
	}
}

// sushyInventory: what inspection can read from sushy-tools' fake system.
func sushyInventory(t *testing.T, b bmcTarget) {
	inv, err := b.d.Inventory(context.Background(), b.node(b.password))
	if err != nil {
		t.Fatalf("Inventory = %v", err)
	}
	want := redfish.Inventory{MACs: []string{sushyMAC}}
	if !reflect.DeepEqual(inv, want) {
		t.Errorf("Inventory = %+v, want %+v", inv, want)
	}
}

// TestSushyToolsLive runs the suite against a running sushy-tools emulator
// (ANVIL_SUSHY_TOOLS_URL, its fake driver, basic auth admin/password) and,
// with ANVIL_SUSHY_TOOLS_RECORD=1, rewrites the recording the replay tests
// serve. CI has no sushy-tools: it runs the replay.
func TestSushyToolsLive(t *testing.T) {
	addr := os.Getenv("ANVIL_SUSHY_TOOLS_URL")
	if addr == "" {
		t.Skip("ANVIL_SUSHY_TOOLS_URL not set (see testdata/sushy-tools/README.md)")
	}
	rec := &recorder{next: http.DefaultTransport, password: sushyPassword}
	// sushy-tools applies power changes 1-11 s late
	d := redfish.New(redfish.Config{Attempts: 3, RetryInterval: 200 * time.Millisecond, Timeout: 10 * time.Second,
		PowerTimeout: 30 * time.Second, Transport: rec}) // polls every 1 s, as Ironic
	b := bmcTarget{d: d, address: addr, password: sushyPassword, bootDevs: []string{"pxe", "disk", "cdrom"}, inspected: sushyInspected}
	b.run(t)
	t.Run("inventory", func(t *testing.T) { sushyInventory(t, b) })
	t.Run("virtual media", func(t *testing.T) { testVirtualMedia(t, addr, rec) })
	isos := isoServer(t)
	t.Run("virtual media boot", func(t *testing.T) { sushyVMBoot(t, b, isos.URL) })
	bad := &recorder{next: http.DefaultTransport, password: sushyPassword}
	t.Run("unfetchable image", func(t *testing.T) {
		d := redfish.New(redfish.Config{Attempts: 3, RetryInterval: 200 * time.Millisecond, Timeout: 10 * time.Second, Transport: bad})
		sushyBadImage(t, d, bmcTarget{address: addr, password: sushyPassword}, "http://"+closedPort(t))
	})
	if os.Getenv("ANVIL_SUSHY_TOOLS_RECORD") != "" && !t.Failed() {
		rec.save(t, sushyRecording)
		bad.keepOnly(func(ex exchange) bool { return ex.Status >= 400 })
		bad.save(t, sushyBadImageRecording)
	}
}

// TestSushyToolsReplay runs the suite against what sushy-tools answered:
// a service root without SessionService (auth auto must use basic), no
// Memory collection (404), power changes that show late, boot overrides
// always Continuous.
func TestSushyToolsReplay(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: sushyPassword, ContinuousOnly: true, DelayedPower: true})
	rp.loadExchanges(t, sushyRecording)
	srv := rp.start(t)
	b := bmcTarget{d: fastDriver(), address: srv.URL, password: sushyPassword, bootDevs: []string{"pxe", "disk", "cdrom"}, inspected: sushyInspected}
	b.run(t)
	t.Run("inventory", func(t *testing.T) { sushyInventory(t, b) })
	t.Run("virtual media", func(t *testing.T) { testVirtualMedia(t, srv.URL, http.DefaultTransport) })
	t.Run("virtual media boot", func(t *testing.T) { sushyVMBoot(t, b, isoServer(t).URL) })
	for _, r := range rp.Requests {
		if strings.Contains(r, "SessionService") {
			t.Errorf("auth auto tried a session on a BMC whose root links none: %s", r)
		}
	}
}

// TestMockupReplayWithSessions runs the suite against the DMTF mockup, whose
// service root links a SessionService: auth auto logs in there.
func TestMockupReplayWithSessions(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: testPassword})
	rp.loadMockup(t, mockupDir)
	srv := rp.start(t)
	b := bmcTarget{d: fastDriver(), address: srv.URL, systemID: "/redfish/v1/Systems/437XR1138R2", password: testPassword,
		bootDevs: []string{"pxe", "disk", "cdrom", "bios"}, persistent: true,
		inspected: func(t *testing.T, task *driver.Task, err error) {
			if err != nil {
				t.Fatal(err)
			}
			want := model.JSON{"cpus": 16, "cpu_arch": "x86_64", "memory_mb": 98304, "local_gb": 3724}
			if !reflect.DeepEqual(task.Node.Properties, want) || len(task.Ports) != 3 {
				t.Errorf("properties %v, %d ports; want %v, 3 ports", task.Node.Properties, len(task.Ports), want)
			}
		}}
	b.run(t)
	if rp.Logins == 0 {
		t.Error("auth auto never logged in to a BMC whose root links a SessionService")
	}
	for _, r := range rp.Requests {
		if strings.HasPrefix(r, "POST /redfish/v1/SessionService/Sessions") {
			return
		}
	}
	t.Error("no login at the root's Links.Sessions")
}

// TestExpiredSessionIsRenewedOnce: a session the BMC forgot is replaced by
// one new login; when that login is refused too the call fails naming the
// account, never the password, and auth auto does not fall back to basic.
func TestExpiredSessionIsRenewedOnce(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: testPassword})
	rp.loadMockup(t, mockupDir)
	srv := rp.start(t)
	d := fastDriver()
	b := bmcTarget{d: d, address: srv.URL, systemID: "437XR1138R2", password: testPassword}
	task := &driver.Task{Node: b.node(testPassword)}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := d.PowerState(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if rp.Logins != 1 {
		t.Fatalf("%d logins for three calls, want 1 (the session is reused)", rp.Logins)
	}
	rp.ExpireSessions()
	if _, err := d.PowerState(ctx, task); err != nil {
		t.Fatalf("after the BMC forgot the session: %v", err)
	}
	if rp.Logins != 2 {
		t.Fatalf("%d logins, want 2 (one re-login)", rp.Logins)
	}
	rp.mu.Lock()
	rp.cfg.Password = "rotated-on-the-bmc"
	rp.sessions = map[string]bool{}
	rp.Requests = nil
	rp.mu.Unlock()
	_, err := d.PowerState(ctx, task)
	if !errors.Is(err, redfish.ErrAuth) || !strings.Contains(err.Error(), `"admin"`) || strings.Contains(err.Error(), testPassword) {
		t.Fatalf("re-login refused: %v, want ErrAuth naming the user, without the password", err)
	}
	logins := 0
	for _, r := range rp.Requests {
		if strings.HasPrefix(r, "POST ") {
			logins++
		}
	}
	if logins != 1 {
		t.Errorf("requests after the password changed: %v, want exactly one login attempt", rp.Requests)
	}
}

// TestSessionExpiresMidCollection: the BMC forgets the session while gofish
// reads a collection's members in parallel; every refused call is retried
// with one shared new session.
func TestSessionExpiresMidCollection(t *testing.T) {
	expired := false
	rp := newReplay(replayConfig{User: sushyUser, Password: testPassword, Before: func(rp *replay, req string) {
		if !expired && strings.HasPrefix(req, "GET /redfish/v1/Systems/437XR1138R2/Processors/") {
			expired = true
			rp.sessions = map[string]bool{}
		}
	}})
	rp.loadMockup(t, mockupDir)
	srv := rp.start(t)
	b := bmcTarget{d: fastDriver(), address: srv.URL, systemID: "437XR1138R2", password: testPassword}
	for i := 0; i < 20; i++ { // each round expires once more
		rp.mu.Lock()
		expired = false
		rp.mu.Unlock()
		inv, err := b.d.Inventory(context.Background(), b.node(testPassword))
		if err != nil || inv.CPUs != 16 {
			t.Fatalf("round %d: %+v, %v", i, inv, err)
		}
		if rp.Logins != i+2 {
			t.Fatalf("round %d: %d logins, want %d (one per expiry)", i, rp.Logins, i+2)
		}
	}
}

// TestAuthAutoFallsBackToBasic: with a root that links a SessionService
// whose login fails (not for want of a network), auth auto uses basic auth
// (sushy's SessionOrBasicAuth) and says so in the log, without the password
// the BMC echoed; auth session does not fall back.
func TestAuthAutoFallsBackToBasic(t *testing.T) {
	rp := newReplay(replayConfig{User: sushyUser, Password: testPassword, LoginStatus: http.StatusInternalServerError})
	rp.loadMockup(t, mockupDir)
	srv := rp.start(t)
	var logs bytes.Buffer
	d := redfish.New(redfish.Config{Attempts: 2, RetryInterval: time.Millisecond, Timeout: 5 * time.Second,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	b := bmcTarget{d: d, address: srv.URL, systemID: "437XR1138R2", password: testPassword}
	n := b.node(testPassword)
	if _, err := d.PowerState(context.Background(), &driver.Task{Node: n}); err != nil {
		t.Fatalf("auto: %v", err)
	}
	if rp.Logins != 0 || !strings.Contains(logs.String(), "falling back to basic auth") {
		t.Errorf("logins %d, log %q; want a logged fallback", rp.Logins, logs.String())
	}
	if strings.Contains(logs.String(), testPassword) {
		t.Errorf("the log shows the password: %s", logs.String())
	}
	n.DriverInfo["redfish_auth_type"] = "session"
	_, err := fastDriver().PowerState(context.Background(), &driver.Task{Node: n})
	if err == nil || strings.Contains(err.Error(), testPassword) {
		t.Fatalf("auth session without a session: %v, want an error without the password", err)
	}
}

// testVirtualMedia inserts and ejects an image in the system's virtual CD
// (InsertMedia/EjectMedia actions), the image served on loopback.
func testVirtualMedia(t *testing.T, addr string, rt http.RoundTripper) {
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte{0}, 2048))
	}))
	defer img.Close()
	hc := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	call := func(method, p string, body any) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, addr+p, rd)
		req.SetBasicAuth(sushyUser, sushyPassword)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			msg, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %d %s", method, p, resp.StatusCode, msg)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	id := func(m map[string]any, k string) string {
		v, _ := m[k].(map[string]any)
		s, _ := v["@odata.id"].(string)
		return s
	}
	systems := call(http.MethodGet, "/redfish/v1/Systems", nil)
	members, _ := systems["Members"].([]any)
	if len(members) == 0 {
		t.Fatal("no systems")
	}
	sys := call(http.MethodGet, members[0].(map[string]any)["@odata.id"].(string), nil)
	vmPath := id(sys, "VirtualMedia")
	if vmPath == "" {
		t.Fatal("the system links no VirtualMedia")
	}
	col := call(http.MethodGet, vmPath, nil)
	var cd string
	items, _ := col["Members"].([]any)
	for _, it := range items {
		p := it.(map[string]any)["@odata.id"].(string)
		dev := call(http.MethodGet, p, nil)
		types, _ := dev["MediaTypes"].([]any)
		for _, mt := range types {
			if mt == "CD" || mt == "DVD" {
				cd = p
			}
		}
	}
	if cd == "" {
		t.Fatalf("no CD among %v", items)
	}
	actions, _ := call(http.MethodGet, cd, nil)["Actions"].(map[string]any)
	target := func(name string) string {
		a, _ := actions["#VirtualMedia."+name].(map[string]any)
		s, _ := a["target"].(string)
		if s == "" {
			t.Fatalf("%s lacks the %s action", cd, name)
		}
		return s
	}
	call(http.MethodPost, target("InsertMedia"), map[string]any{"Image": img.URL + "/boot.iso", "Inserted": true, "WriteProtected": true})
	dev := call(http.MethodGet, cd, nil)
	if dev["Inserted"] != true || !strings.HasSuffix(dev["Image"].(string), "boot.iso") {
		t.Errorf("after InsertMedia: Inserted=%v Image=%v", dev["Inserted"], dev["Image"])
	}
	call(http.MethodPost, target("EjectMedia"), map[string]any{})
	dev = call(http.MethodGet, cd, nil)
	if dev["Inserted"] == true || (dev["Image"] != nil && dev["Image"] != "") {
		t.Errorf("after EjectMedia: Inserted=%v Image=%v", dev["Inserted"], dev["Image"])
	}
}
