package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	anvilapi "github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// viewer is a console WebSocket client collecting what it receives.
type viewer struct {
	conn     *websocket.Conn
	mu       sync.Mutex
	out      strings.Builder
	statuses []bool // read_only of each status message
	end      string // the end message's reason
	closeMsg string // the close frame's reason
	closed   chan struct{}
}

// dialViewer dials url until it upgrades (the owner picks an enabled
// console up at its next sweep: 503 until then), within d.
func dialViewer(t *testing.T, url string, d time.Duration) *viewer {
	t.Helper()
	var (
		conn *websocket.Conn
		err  error
		resp *http.Response
	)
	for deadline := time.Now().Add(d); ; {
		conn, resp, err = websocket.Dial(t.Context(), url, nil)
		if err == nil {
			break
		}
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("console WebSocket %s: %v (response %v)", url, err, resp)
		}
		time.Sleep(200 * time.Millisecond) // polling with a deadline
	}
	v := &viewer{conn: conn, closed: make(chan struct{})}
	t.Cleanup(func() { conn.CloseNow() })
	go func() {
		defer close(v.closed)
		for {
			typ, p, err := conn.Read(context.Background())
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					v.mu.Lock()
					v.closeMsg = ce.Reason
					v.mu.Unlock()
				}
				return
			}
			v.mu.Lock()
			if typ == websocket.MessageBinary {
				v.out.Write(p)
			} else {
				var m struct {
					Type     string `json:"type"`
					ReadOnly bool   `json:"read_only"`
					Reason   string `json:"reason"`
				}
				_ = json.Unmarshal(p, &m)
				switch m.Type {
				case "status":
					v.statuses = append(v.statuses, m.ReadOnly)
				case "end":
					v.end = m.Reason
				}
			}
			v.mu.Unlock()
		}
	}()
	return v
}

func (v *viewer) output() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.String()
}

// readOnly is the last status's read_only, and whether one came.
func (v *viewer) readOnly() (bool, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.statuses) == 0 {
		return false, false
	}
	return v.statuses[len(v.statuses)-1], true
}

func (v *viewer) typeIn(t *testing.T, s string) {
	t.Helper()
	if err := v.conn.Write(t.Context(), websocket.MessageBinary, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// TestConsoleRelayedToOwner: on PostgreSQL, an API-only process relays
// console viewers to the conductor process that owns the node and holds
// its BMC session (ipmi_sim's SOL to a serial peer): the first viewer sees
// the machine's output and types into it, a second is read-only, the
// conductor's relay endpoint refuses whoever comes without a ticket (and
// the API process serves no such endpoint), and disabling the console ends
// the relayed viewer with the conductor's reason.
func TestConsoleRelayedToOwner(t *testing.T) {
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-relay", "sol-pw-123", "tcp:"+serial.Addr)
	db := pg.URL(t)
	cond, condProc := testbin.ServeOn(t, anvilBin, db, "worker", append([]string{"--role", "conductor"}, ringFlags...)...)
	api, apiProc := testbin.ServeOn(t, anvilBin, db, "front", append([]string{"--role", "api"}, ringFlags...)...)

	id := testbin.MustCall(t, http.StatusCreated, http.MethodPost, api+"/v1/nodes", map[string]any{
		"driver": "ipmi", "console_interface": "ipmi-sol", "driver_info": map[string]any{
			"ipmi_address": "127.0.0.1", "ipmi_port": port, "ipmi_username": ipmisim.User, "ipmi_password": "sol-pw-123"}}).JSON(t)["uuid"].(string)
	path := api + "/v1/nodes/" + id + "/states/console"
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, path, map[string]any{"enabled": true})
	info, _ := testbin.MustCall(t, http.StatusOK, http.MethodGet, path, nil).JSON(t)["console_info"].(map[string]any)
	url, _ := info["url"].(string)
	if want := "ws://" + strings.TrimPrefix(api, "http://") + "/v1/nodes/" + id + "/console/ws"; url != want {
		t.Fatalf("console_info.url %q, want %q (the API process's)", url, want)
	}

	a := dialViewer(t, url, 30*time.Second)
	eventually(t, 10*time.Second, "the first viewer's status", func() bool { _, ok := a.readOnly(); return ok })
	if ro, _ := a.readOnly(); ro {
		t.Fatal("the first relayed viewer is read-only")
	}
	eventually(t, 20*time.Second, "the machine's output through the relay", func() bool {
		serial.Write([]byte("relayed-hello\r\n"))
		return strings.Contains(a.output(), "relayed-hello")
	})
	// The recorded output is the owner's; the API process asks it.
	if r := testbin.Call(t, "latest", http.MethodGet, api+"/v1/nodes/"+id+"/console/log?tail=4096", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "relayed-hello") {
		t.Errorf("the console log through the API process: HTTP %d %q", r.Status, r.Body)
	}
	a.typeIn(t, "ping\r")
	eventually(t, 10*time.Second, "the echo of a relayed keystroke", func() bool { return strings.Contains(a.output(), "echo: ping") })

	b := dialViewer(t, url, 10*time.Second)
	eventually(t, 10*time.Second, "the second viewer's status", func() bool { _, ok := b.readOnly(); return ok })
	if ro, _ := b.readOnly(); !ro {
		t.Fatal("the second relayed viewer holds the keyboard too")
	}
	b.typeIn(t, "intruder\r")
	a.typeIn(t, "after\r")
	eventually(t, 10*time.Second, "the writer's second line", func() bool { return slices.Contains(serial.Lines(), "after") })
	if slices.Contains(serial.Lines(), "intruder") {
		t.Fatalf("a read-only viewer's keystrokes reached the machine: %q", serial.Lines())
	}
	eventually(t, 10*time.Second, "the echo on the read-only viewer", func() bool { return strings.Contains(b.output(), "echo: after") })

	// The relay endpoint: a ticket or nothing; none on the API process.
	relay := strings.Replace(cond, "http://", "ws://", 1) + "/internal/console/" + id + "/ws"
	for _, ticket := range []string{"", "forged-ticket-0123456789abcdef0123456789abcdef"} {
		h := http.Header{}
		if ticket != "" {
			h.Set("X-Anvil-Console-Ticket", ticket)
		}
		_, resp, err := websocket.Dial(t.Context(), relay, &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the conductor's relay with ticket %q: %v %v, want 401", ticket, resp, err)
		}
	}
	if r := testbin.Call(t, "latest", http.MethodGet, api+"/internal/console/"+id+"/ws", nil); r.Status != http.StatusNotFound {
		t.Errorf("the API process's /internal/console: HTTP %d, want 404", r.Status)
	}

	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, path, map[string]any{"enabled": false})
	select {
	case <-a.closed:
	case <-time.After(30 * time.Second): // the owner's sweep notices
		t.Fatal("the relayed viewer outlived the console")
	}
	a.mu.Lock()
	end, closeMsg := a.end, a.closeMsg
	a.mu.Unlock()
	if !strings.Contains(end, "disabled") || !strings.Contains(closeMsg, "disabled") {
		t.Errorf("end %q, close reason %q: want the conductor's reason", end, closeMsg)
	}
	for name, p := range map[string]*testbin.Process{"conductor": condProc, "api": apiProc} {
		if logs := p.Logs.String(); strings.Contains(logs, "sol-pw-123") {
			t.Errorf("the %s process logged the BMC password", name)
		}
	}
}

// TestConsoleRelayEndsWhenTokenExpires: under --auth-strategy jwt, a viewer
// relayed by an API process is ended by that process when its token
// expires: an end message and close 1008 with the reason, while the owner
// keeps the console for the others.
func TestConsoleRelayEndsWhenTokenExpires(t *testing.T) {
	iss := authtest.NewIssuer(t)
	jwt := []string{"--auth-strategy", "jwt", "--jwt-issuer", iss.URL, "--jwt-audience", "anvil"}
	admin := iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-relay-exp", "sol-pw-123", "tcp:"+serial.Addr)
	db := pg.URL(t)
	testbin.ServeOn(t, anvilBin, db, "worker", append(append([]string{"--role", "conductor"}, jwt...), ringFlags...)...)
	api, _ := testbin.ServeOn(t, anvilBin, db, "front", append(append([]string{"--role", "api"}, jwt...), ringFlags...)...)
	const id = "3f2b9c1e-7d4a-4e8b-a6c5-0d1e2f3a4b5c"
	call := func(method, path, body string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: HTTP %d, want %d", method, path, resp.StatusCode, want)
		}
	}
	call("POST", "/v1/nodes", fmt.Sprintf(`{"uuid":%q,"driver":"ipmi","console_interface":"ipmi-sol","driver_info":{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123"}}`, id, port, ipmisim.User), 201)
	call("PUT", "/v1/nodes/"+id+"/states/console", `{"enabled": true}`, 202)
	url := strings.Replace(api, "http://", "ws://", 1) + "/v1/nodes/" + id + "/console/ws"
	dial := func(token string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	}
	var keep *websocket.Conn
	eventually(t, 30*time.Second, "the owner holds the console", func() bool {
		c, _, err := dial(admin)
		keep = c
		return err == nil
	})
	defer keep.CloseNow()
	go func() { // a viewer reads what it is sent
		for {
			if _, _, err := keep.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	short := iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}, "exp": time.Now().Add(3 * time.Second).Unix()})
	c, _, err := dial(short)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var end string
	for {
		typ, p, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != anvilapi.ExpiredReason {
				t.Fatalf("the expired relayed viewer's close: %v, want 1008 %q", err, anvilapi.ExpiredReason)
			}
			break
		}
		if typ == websocket.MessageText && strings.Contains(string(p), `"end"`) {
			end = string(p)
		}
	}
	if !strings.Contains(end, anvilapi.ExpiredReason) {
		t.Errorf("end message %q", end)
	}
	if err := keep.Ping(ctx); err != nil {
		t.Errorf("the viewer with a valid token ended too: %v", err)
	}
}
