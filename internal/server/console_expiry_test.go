package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/dashboard"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// TestConsoleEndsWithItsCredential: under --auth-strategy jwt, a console
// viewer whose token expires while it watches is sent an end message and
// closed with 1008 (policy violation) and a reason saying to authenticate
// again; a viewer whose token is still valid stays, and a new connection
// with the expired token is refused. A viewer on a dashboard session ends
// when the session is logged out.
func TestConsoleEndsWithItsCredential(t *testing.T) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL, Audience: "anvil"}}
		c.ConsoleRecheck = 100 * time.Millisecond
	})
	admin := iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
	call := func(method, path, body string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
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
	const node = "6a1c0f0e-8c5e-4d6b-9b1a-2f7e0d4c1a01"
	serial := ipmisim.NewSerial(t, "")
	port := ipmisim.StartSOL(t, "anvil-expiry", "sol-pw-123", "tcp:"+serial.Addr)
	call("POST", "/v1/nodes", fmt.Sprintf(`{"uuid":"`+node+`","name":"exp-01","driver":"ipmi","console_interface":"ipmi-sol","driver_info":{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123"}}`, port, ipmisim.User), 201)
	call("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": true}`, 202)
	url := "ws://" + strings.TrimPrefix(s.base, "http://") + "/v1/nodes/" + node + "/console/ws"
	dial := func(token string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	}
	var b *websocket.Conn
	waitFor(t, "the console WebSocket", func() bool {
		c, _, err := dial(admin)
		b = c
		return err == nil
	})
	defer b.CloseNow()
	// The console is held: a viewer whose token ends in 3 s.
	short := iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}, "exp": time.Now().Add(3 * time.Second).Unix()})
	a, _, err := dial(short)
	if err != nil {
		t.Fatal(err)
	}
	defer a.CloseNow()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var end string
	for {
		typ, p, err := a.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != api.ExpiredReason {
				t.Fatalf("the expired viewer's close: %v, want 1008 %q", err, api.ExpiredReason)
			}
			break
		}
		if typ == websocket.MessageText && strings.Contains(string(p), `"end"`) {
			end = string(p)
		}
	}
	if !strings.Contains(end, api.ExpiredReason) {
		t.Errorf("end message %q, want the reason %q", end, api.ExpiredReason)
	}
	// The other viewer stays: it still receives the machine's output.
	serial.Write([]byte("still-here\r\n"))
	for got := ""; !strings.Contains(got, "still-here"); {
		typ, p, err := b.Read(ctx)
		if err != nil {
			t.Fatalf("the valid viewer ended too: %v", err)
		}
		if typ == websocket.MessageBinary {
			got += string(p)
		}
	}
	if _, resp, err := dial(short); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a new connection with the expired token: %v %v, want 401", resp, err)
	}

	// A dashboard session's viewer ends when the session is logged out.
	req, _ := http.NewRequest("POST", s.base+dashboard.SessionPath, strings.NewReader(`{"token": "`+admin+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sess struct {
		CSRF string `json:"csrf_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	if resp.StatusCode != 200 || cookie == "" {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	sv, _, err := websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookie}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.CloseNow()
	time.Sleep(300 * time.Millisecond) // a few re-checks pass while the session holds
	req, _ = http.NewRequest("DELETE", s.base+dashboard.SessionPath, nil)
	req.Header.Set("Cookie", cookie)
	req.Header.Set(auth.CSRFHeader, sess.CSRF)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %v %v", resp, err)
	}
	for {
		_, _, err := sv.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != api.LoggedOutReason {
				t.Fatalf("the logged-out viewer's close: %v, want 1008 %q", err, api.LoggedOutReason)
			}
			break
		}
	}
}
