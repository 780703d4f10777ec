package server

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/cli"
)

// TestAnvilCLIHTTPBasic: `anvil node ...` authenticates from the
// environment (OS_AUTH_TYPE=http_basic, OS_USERNAME, OS_PASSWORD) and
// verifies the server with OS_CACERT; --debug never shows the password.
func TestAnvilCLIHTTPBasic(t *testing.T) {
	cert, key, _ := selfSigned(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "op", "Cli-Passw0rd")}
		c.Security.TLSCertFile, c.Security.TLSKeyFile = cert, key
	})
	run := func(env map[string]string, args ...string) (string, string, error) { return runCLI(t, env, args...) }
	env := map[string]string{"OS_ENDPOINT": strings.Replace(s.base, "http://", "https://", 1), "OS_AUTH_TYPE": "http_basic",
		"OS_USERNAME": "op", "OS_PASSWORD": "Cli-Passw0rd", "OS_CACERT": cert}
	if _, errOut, err := run(env, "node", "create", "--driver", "fake-hardware", "--name", "cli-node", "--debug"); err != nil {
		t.Fatalf("node create: %v\n%s", err, errOut)
	} else if strings.Contains(errOut, "Cli-Passw0rd") || !strings.Contains(errOut, "REQ: POST") {
		t.Fatalf("--debug output:\n%s", errOut)
	}
	out, errOut, err := run(env, "node", "list", "-f", "value", "-c", "Name")
	if err != nil || strings.TrimSpace(out) != "cli-node" {
		t.Fatalf("node list: %q %v\n%s", out, err, errOut)
	}
	env["OS_PASSWORD"] = "wrong"
	if out, _, err := run(env, "node", "list"); err == nil || !strings.Contains(err.Error(), "Incorrect username or password") {
		t.Fatalf("a wrong password: %q %v", out, err)
	}
}

// runCLI runs the anvil CLI in-process with env as its environment.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := 0
	root := &cobra.Command{Use: "anvil", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(cli.Commands(cli.Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] },
		Exit: func(c int) { code = c }})...)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

// TestAnvilCLIHints: a refused login says how to give credentials, and an
// unknown driver names the enabled ones (Ironic's text names none).
func TestAnvilCLIHints(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "op", "Cli-Passw0rd")}
	})
	_, _, err := runCLI(t, map[string]string{"OS_ENDPOINT": s.base}, "node", "list")
	if err == nil || !strings.Contains(err.Error(), "OS_AUTH_TYPE=http_basic") || strings.Contains(err.Error(), `{"error"`) {
		t.Errorf("node list without credentials: %v", err)
	}
	env := map[string]string{"OS_ENDPOINT": s.base, "OS_AUTH_TYPE": "http_basic", "OS_USERNAME": "op", "OS_PASSWORD": "Cli-Passw0rd"}
	_, _, err = runCLI(t, env, "node", "create", "--driver", "no-such-driver")
	if err == nil || !strings.Contains(err.Error(), "Enabled drivers: ") || !strings.Contains(err.Error(), "fake-hardware") {
		t.Errorf("node create with an unknown driver: %v", err)
	}
}
