package api

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/cli"
)

// TestAnvilCLIVolumes drives the real API with `anvil volume connector`
// and `anvil volume target` (internal/cli, in process).
func TestAnvilCLIVolumes(t *testing.T) {
	e := newEnv(t)
	off, on, _ := volumeNodes(e)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	run := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := 0
		env := cli.Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
			Getenv:     func(k string) string { return map[string]string{"OS_ENDPOINT": srv.URL}[k] },
			Exit:       func(c int) { code = c },
			IsTerminal: func(io.Writer) bool { return false }}
		root := &cobra.Command{Use: "anvil", SilenceUsage: true, SilenceErrors: true}
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.AddCommand(cli.Commands(env)...)
		root.SetArgs(append([]string{"--retry-interval", "0"}, args...))
		if err := root.ExecuteContext(t.Context()); err != nil {
			stderr.WriteString(err.Error())
			code = 1
		}
		return stdout.String(), stderr.String(), code
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(args...)
		if code != 0 {
			t.Fatalf("anvil %s: %d %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	conn := strings.TrimSpace(mustRun("volume", "connector", "create", "--node", "vol-off", "--type", "iqn",
		"--connector-id", "iqn.1", "-f", "value", "-c", "uuid"))
	mustRun("volume", "connector", "set", conn, "--connector-id", "iqn.2", "--extra", "a=b")
	if out := mustRun("volume", "connector", "list", "--node", "vol-off", "--long", "-f", "value", "-c", "Connector ID", "-c", "Extra"); out != "iqn.2 a='b'\n" {
		t.Errorf("connector list: %q", out)
	}
	if _, errOut, code := run("volume", "connector", "set", conn, "--node", on.Name); code != 1 ||
		!strings.Contains(errOut, `"volume connector update" can not be performed on node "`+on.UUID+`" while it is in state "power on". (HTTP 400)`) {
		t.Errorf("move to a powered-on node: %d %s", code, errOut)
	}
	target := strings.TrimSpace(mustRun("volume", "target", "create", "--node", off.UUID, "--type", "iscsi", "--boot-index", "0",
		"--volume-id", "v1", "--property", "auth_password=s3cret", "-f", "value", "-c", "uuid"))
	mustRun("volume", "target", "set", target, "--boot-index", "0", "--volume-id", "v2")
	if out := mustRun("volume", "target", "show", target, "-f", "value", "-c", "volume_id", "-c", "boot_index", "-c", "properties"); out != "0\n{'auth_password': '******'}\nv2\n" {
		t.Errorf("target show: %q", out)
	}
	mustRun("volume", "target", "unset", target, "--property", "auth_password")
	if out := mustRun("volume", "target", "delete", target); out != "Deleted volume target "+target+"\n" {
		t.Errorf("delete: %q", out)
	}
	mustRun("volume", "connector", "delete", conn)
	if out := mustRun("volume", "connector", "list", "-f", "value"); out != "" {
		t.Errorf("list after delete: %q", out)
	}
}
