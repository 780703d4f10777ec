package scale

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// A dashboard login on one API process is a session on every API process
// of the database, and a restart of the process keeps it: the cookie works
// on process B, and on process A after A restarted; a logout on B ends it
// on A too.
func TestDashboardSessionAcrossAPIProcesses(t *testing.T) {
	db := pg.URL(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("Dash-pass-9"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(users, []byte("op:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := append([]string{"--role", "api", "--auth-strategy", "http_basic", "--http-basic-auth-user-file", users}, ringFlags...)
	apiA, procA := testbin.ServeOn(t, anvilBin, db, "front-a", flags...)
	apiB, _ := testbin.ServeOn(t, anvilBin, db, "front-b", flags...)

	call := func(base, method, path, body string, hdr ...string) (int, string, *http.Response) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	login := func(base string) (cookie, csrf string) {
		t.Helper()
		st, body, resp := call(base, "POST", "/dashboard/session", `{"username": "op", "password": "Dash-pass-9"}`)
		var info struct {
			CSRF string `json:"csrf_token"`
		}
		_ = json.Unmarshal([]byte(body), &info)
		for _, c := range resp.Cookies() {
			if c.Name == "anvil_session" {
				cookie = c.Name + "=" + c.Value
			}
		}
		if st != 200 || cookie == "" || info.CSRF == "" {
			t.Fatalf("login on %s: %d %s", base, st, body)
		}
		if strings.Contains(body, "Dash-pass-9") {
			t.Fatalf("the login answer holds the password: %s", body)
		}
		return cookie, info.CSRF
	}

	cookie, csrf := login(apiA)
	if st, body, _ := call(apiB, "GET", "/v1/nodes", "", "Cookie", cookie); st != 200 {
		t.Fatalf("B with A's session: %d %s", st, body)
	}
	if st, body, _ := call(apiB, "GET", "/dashboard/session", "", "Cookie", cookie); st != 200 ||
		!strings.Contains(body, `"authenticated":true`) || !strings.Contains(body, csrf) {
		t.Fatalf("B's view of A's session: %d %s", st, body)
	}
	if st, body, _ := call(apiB, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "by-session"}`, "Cookie", cookie); st != 403 {
		t.Fatalf("a write on B without the CSRF header: %d %s", st, body)
	}
	if st, body, _ := call(apiB, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "by-session"}`, "Cookie", cookie, "X-Anvil-CSRF", csrf); st != 201 {
		t.Fatalf("a write on B with A's session and CSRF token: %d %s", st, body)
	}

	// A restarts: the session is still there.
	if err := procA.Stop(t); err != nil {
		t.Fatalf("stop A: %v", err)
	}
	apiA, _ = testbin.ServeOn(t, anvilBin, db, "front-a", flags...)
	if st, body, _ := call(apiA, "GET", "/v1/nodes/by-session", "", "Cookie", cookie); st != 200 {
		t.Fatalf("restarted A with the session: %d %s", st, body)
	}

	// Logging out on B ends the session on A.
	if st, body, _ := call(apiB, "DELETE", "/dashboard/session", "", "Cookie", cookie, "X-Anvil-CSRF", csrf); st != 204 {
		t.Fatalf("logout on B: %d %s", st, body)
	}
	if st, body, _ := call(apiA, "GET", "/v1/nodes", "", "Cookie", cookie); st != 401 {
		t.Fatalf("A after the logout on B: %d %s", st, body)
	}
}
