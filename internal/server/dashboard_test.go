package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeDashboard: a browser's GET / is redirected to the dashboard,
// which `anvil serve` serves; an API client's GET / is Ironic's root.
func TestServeDashboard(t *testing.T) {
	s := serve(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, accept string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", s.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get("/", "text/html,application/xhtml+xml,*/*;q=0.8")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/dashboard/" {
		t.Errorf("browser GET /: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, accept := range []string{"", "application/json", "*/*"} {
		resp := get("/", accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"OpenStack Ironic API"`) {
			t.Errorf("API GET / (Accept %q): %d %s", accept, resp.StatusCode, body)
		}
	}
	resp = get("/dashboard/", "text/html")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "app.js") {
		t.Errorf("GET /dashboard/: %d %s", resp.StatusCode, body)
	}
	if resp := get("/dashboard/lifecycle.svg", ""); resp.StatusCode != 200 {
		t.Errorf("GET /dashboard/lifecycle.svg: %d", resp.StatusCode)
	}
}
