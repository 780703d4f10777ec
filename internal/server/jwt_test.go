package server

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
	"github.com/anvil-metal/anvil/internal/cli"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestJWTServe: with --auth-strategy jwt, a token of the local issuer
// with the admin role writes (anvil CLI from OS_TOKEN; the baremetal CLI
// with --os-token when ANVIL_BAREMETAL_CLI=1), a reader's token only
// reads, and nothing is written without a valid token.
func TestJWTServe(t *testing.T) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL, Audience: "anvil"}}
	})
	admin := iss.Token(t, iss.Key, map[string]any{"roles": []any{"admin"}, "preferred_username": "alice"})
	reader := iss.Token(t, iss.Key, map[string]any{"roles": []any{"reader"}})

	var stdout, stderr bytes.Buffer
	code := 0
	env := map[string]string{"OS_ENDPOINT": s.base, "OS_TOKEN": admin}
	root := &cobra.Command{Use: "anvil", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(cli.Commands(cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] },
		Exit: func(c int) { code = c }})...)
	root.SetArgs([]string{"node", "create", "--driver", "fake-hardware", "--name", "jwt-node"})
	if err := root.ExecuteContext(t.Context()); err != nil || code != 0 {
		t.Fatalf("anvil node create with OS_TOKEN: %v %d\n%s", err, code, stderr.String())
	}

	get := func(method, path, token, body string) int {
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/v1/nodes/jwt-node", reader, "", 200},
		{"PATCH", "/v1/nodes/jwt-node", reader, `[{"op": "add", "path": "/extra/x", "value": 1}]`, 403},
		{"POST", "/v1/nodes", "", `{"driver": "fake-hardware", "name": "anon"}`, 401},
		{"POST", "/v1/nodes", "forged", `{"driver": "fake-hardware", "name": "forged"}`, 401},
		{"GET", "/v1/nodes/anon", admin, "", 404},
		{"GET", "/v1/nodes/forged", admin, "", 404},
	} {
		if got := get(c.method, c.path, c.token, c.body); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}

	t.Run("baremetal CLI", func(t *testing.T) {
		bin := testbin.BaremetalCLI(t)
		cmd := exec.Command(bin, "--os-endpoint", s.base, "--os-auth-type", "admin_token", "--os-token", admin,
			"--max-retries", "0", "node", "show", "jwt-node", "-f", "value", "-c", "name")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "jwt-node" {
			t.Fatalf("baremetal --os-token: %v\n%s", err, out)
		}
		cmd = exec.Command(bin, "--os-endpoint", s.base, "--os-auth-type", "admin_token", "--os-token", reader,
			"--max-retries", "0", "node", "set", "jwt-node", "--extra", "x=1")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "403") {
			t.Fatalf("baremetal with a reader token: %v\n%s", err, out)
		}
	})
}
