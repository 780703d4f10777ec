package dashboard_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/dashboard"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// authCall sends one API request with an Authorization header and returns
// the status and the decoded body.
func authCall(t *testing.T, authz, method, url string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// refusedLogin is the one console error a refused login is expected to
// leave: the browser's network log of the 401 the login endpoint answers.
func refusedLogin(m chromedp.ConsoleMessage) bool {
	return m.Source == "network" && strings.HasSuffix(m.URL, dashboard.SessionPath) && strings.Contains(m.Text, "401")
}

// TestDashboardLoginHTTPBasic: with http_basic, the page asks for a login,
// refuses a wrong password, shows an admin every node, acts through the
// session (its CSRF token), never holds the password, and logs out.
func TestDashboardLoginHTTPBasic(t *testing.T) {
	b := startBrowser(t)
	const pw = "Dash-login-pw-7"
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(users, []byte("admin:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := testbin.Serve(t, anvilBin, "dash-basic", "--auth-strategy", "http_basic", "--http-basic-auth-user-file", users)
	admin := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+pw))
	var uuids []string
	for i := range 3 {
		st, n := authCall(t, admin, "POST", base+"/v1/nodes", map[string]any{"name": fmt.Sprintf("basic-%d", i),
			"driver": "fake-hardware", "owner": []string{"p1", "p2", ""}[i],
			"driver_info": map[string]any{"ipmi_password": secret}})
		if st != 201 {
			t.Fatalf("create: %d %v", st, n)
		}
		uuids = append(uuids, n["uuid"].(string))
	}

	b.do("open the dashboard", chromedp.Navigate(base+"/dashboard/"))
	b.until("the login form", `!document.querySelector('#login').hidden && document.querySelector('#login-form').dataset.strategy === 'http_basic'`)
	var shown bool
	b.eval(`!document.querySelector('#overview').hidden`, &shown)
	if shown {
		t.Error("the overview shows before a login")
	}
	b.screenshot("dashboard-login.png")

	b.do("a wrong password",
		chromedp.SetValue(chromedp.CSS(`#login-form input[name=username]`), "admin"),
		chromedp.SetValue(chromedp.CSS(`#login-form input[name=password]`), "not-the-password"),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.until("the refusal", `!document.querySelector('#login-error').hidden`)
	b.eval(`!document.querySelector('#overview').hidden`, &shown)
	if shown {
		t.Fatal("the overview shows after a wrong password")
	}

	b.do("the right password",
		chromedp.SetValue(chromedp.CSS(`#login-form input[name=password]`), pw),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.until("the overview", `!document.querySelector('#overview').hidden && document.querySelector('#login').hidden`)
	b.until("the event stream is live", `document.body.dataset.live === 'true'`)
	b.until("the admin sees every node", sameRows(uuids))
	b.until("the diagram counts them", diagramCount("enroll")+` === "3"`)
	b.until("the conductors", `document.querySelectorAll('#conductors tr').length > 1`)
	var cookie, html string
	b.eval(`document.cookie`, &cookie)
	b.eval(`document.documentElement.outerHTML`, &html)
	if strings.Contains(cookie, "anvil_session") {
		t.Errorf("scripts can read the session cookie: %q", cookie)
	}
	if strings.Contains(html, pw) || strings.Contains(html, secret) {
		t.Error("the page holds the password or the BMC password")
	}

	// An action through the session: the write carries the CSRF token.
	b.eval(`location.hash = '#/node/`+uuids[0]+`'`, nil)
	b.until("the node page", `document.querySelector('#actions button[data-action="set maintenance"]')`)
	b.do("set maintenance", chromedp.Click(chromedp.CSS(`#actions button[data-action="set maintenance"]`)))
	b.until("the confirmation opens", `document.querySelector('#confirm').open`)
	b.do("confirm", chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	b.until("accepted", `document.querySelector('#action-result').textContent.endsWith('accepted')`)
	if _, n := authCall(t, admin, "GET", base+"/v1/nodes/"+uuids[0], nil); n["maintenance"] != true {
		t.Errorf("the node is not in maintenance: %v", n["maintenance"])
	}

	b.do("log out", chromedp.Click(chromedp.CSS(`#logout`)))
	b.until("the login form again", `!document.querySelector('#login').hidden && document.querySelector('#overview').hidden && document.querySelector('#node').hidden`)
	b.eval(`fetch('`+dashboard.SessionPath+`').then(r => r.json()).then(s => { window.__authenticated = s.authenticated; })`, nil)
	b.until("the server says no one is logged in", `window.__authenticated === false`)
	if errs := b.consoleErrors(refusedLogin); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestDashboardProjectJWT: with jwt, a project's token pasted in the login
// shows that project's nodes only — table, diagram, fleet report, node
// page (a leased node's driver_info redacted) and the live stream — and
// the token never stays in the page.
func TestDashboardProjectJWT(t *testing.T) {
	b := startBrowser(t)
	iss := authtest.NewIssuer(t)
	base, _ := testbin.Serve(t, anvilBin, "dash-jwt", "--auth-strategy", "jwt", "--jwt-issuer", iss.URL)
	system := "Bearer " + iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}})
	uuids := map[string]string{}
	for _, n := range []struct{ name, owner, lessee string }{{"a", "p1", ""}, {"b", "p2", "p1"}, {"c", "p2", ""}, {"d", "", ""}} {
		st, m := authCall(t, system, "POST", base+"/v1/nodes", map[string]any{"name": "jwt-" + n.name,
			"driver": "fake-hardware", "owner": n.owner, "lessee": n.lessee,
			"driver_info": map[string]any{"ipmi_username": "root-" + n.name, "ipmi_password": secret}})
		if st != 201 {
			t.Fatalf("create %s: %d %v", n.name, st, m)
		}
		uuids[n.name] = m["uuid"].(string)
	}
	token := iss.Token(t, iss.Key, map[string]any{"roles": []any{"member"}, "project_id": "p1", "preferred_username": "alice"})

	b.do("open the dashboard", chromedp.Navigate(base+"/"))
	b.until("the token form", `!document.querySelector('#login').hidden && document.querySelector('#login-form').dataset.strategy === 'jwt'`)
	b.do("paste the token",
		chromedp.SetValue(chromedp.CSS(`#login-form textarea[name=token]`), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.until("the overview", `!document.querySelector('#overview').hidden`)
	b.until("the event stream is live", `document.body.dataset.live === 'true'`)
	b.until("p1's nodes only", `JSON.stringify(`+tableUUIDs+`.sort()) === `+js(mustJSON([]string{uuids["a"], uuids["b"]}, true)))
	b.until("the diagram counts p1's", diagramCount("enroll")+` === "2"`)
	b.until("the totals are p1's", `document.querySelector('#total').textContent.startsWith('2 nodes')`)
	var hidden bool
	b.eval(`document.querySelector('#conductors-panel').hidden`, &hidden)
	if !hidden {
		t.Error("a project's dashboard shows the conductors")
	}
	var who, html string
	b.eval(`document.querySelector('#who-name').textContent`, &who)
	if who != "alice (project p1)" {
		t.Errorf("logged in as %q", who)
	}
	b.eval(`document.documentElement.outerHTML + document.querySelector('#login-form textarea').value`, &html)
	if strings.Contains(html, token) || strings.Contains(html, secret) {
		t.Error("the page holds the token or the BMC password")
	}

	// The stream brings b's change and not c's (c is p2's only).
	b.eval(`(o => { window.__seen = []; const f = o.onEvent.bind(o); o.onEvent = (t, e) => { window.__seen.push(e.node); f(t, e); }; })(window.anvil.overview)`, nil)
	for _, n := range []string{"c", "b"} {
		if st, m := authCall(t, system, "PUT", base+"/v1/nodes/"+uuids[n]+"/maintenance", map[string]any{"reason": "r"}); st != 202 {
			t.Fatalf("maintenance %s: %d %v", n, st, m)
		}
	}
	b.until("b's change arrives", `window.__seen.includes(`+js(uuids["b"])+`)`)
	var seen []string
	b.eval(`window.__seen`, &seen)
	if slices.Contains(seen, uuids["c"]) {
		t.Errorf("p1's page received c's event: %v", seen)
	}
	b.until("b's row follows", `document.querySelector('#nodes tr[data-uuid=`+js(uuids["b"])+`] td[data-field=maintenance]').textContent === 'true'`)
	b.until("the report follows", `document.querySelector('#total').textContent.includes('1 in maintenance') && document.querySelectorAll('#maint a').length === 1`)
	b.screenshot("dashboard-project.png")

	// The leased node's page: Ironic's placeholder for driver_info.
	b.eval(`location.hash = '#/node/`+uuids["b"]+`'`, nil)
	b.until("b's fields", `document.querySelector('#fields tr[data-field=driver_info]')`)
	var info string
	b.eval(`document.querySelector('#fields tr[data-field=driver_info] pre').textContent`, &info)
	if !strings.Contains(info, "Redacted") || strings.Contains(info, "root-b") {
		t.Errorf("a lessee's view of driver_info: %s", info)
	}
	if errs := b.consoleErrors(nil); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

func mustJSON(v []string, sorted bool) string {
	if sorted {
		v = slices.Sorted(slices.Values(v))
	}
	b, _ := json.Marshal(v)
	return string(b)
}
