// Package cli_test drives the operator CLI (`anvil node ...`) as a user
// does: the real binary, against a real `anvil serve` on a free port with
// a throwaway SQLite database and fake hardware. It runs the five operator
// scripts of the guide (seed 003) with `anvil` in place of `openstack
// baremetal` — from the project's own copy in testdata/scripts always, and
// from the guide's text when the workspace has it — compares a lifecycle through the real `baremetal` CLI with
// the same through `anvil`, and runs a batch over 500 nodes.
package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	// runTimeout bounds one CLI call or one script.
	runTimeout = 90 * time.Second
)

// anvilBin is the binary TestMain builds; binDir holds it as `anvil`.
var anvilBin, binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, &anvilBin, func(dir string) error {
		binDir = dir
		// Nova is not part of Anvil: the deploy script's `openstack server
		// show` reaches this stand-in, which says what it was asked.
		stub := "#!/bin/sh\necho \"openstack-stub: $*\"\n"
		return os.WriteFile(filepath.Join(binDir, "openstack"), []byte(stub), 0o755)
	}))
}

// startServer runs `anvil serve` with a fresh database on a free port and
// returns its URL; see testbin.Serve.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	base, _ := testbin.Serve(t, anvilBin, "cli-conductor", extra...)
	return base
}

// result is what one process printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// run executes name with args in the test's environment: binDir first on
// PATH, OS_ENDPOINT set to base, no other OS_ or ANVIL_ variable.
func run(t *testing.T, base, stdin, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = testEnv(base)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: maskRequestIDs(stderr.String())}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		res.code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, res.stdout, res.stderr)
	}
	return res
}

var requestIDRE = regexp.MustCompile(`req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// maskRequestIDs replaces the request IDs error lines end with
// ("(Request-ID: req-<uuid>)"), which differ on every call.
func maskRequestIDs(s string) string { return requestIDRE.ReplaceAllString(s, "req-<id>") }

func testEnv(base string) []string {
	env := []string{"OS_ENDPOINT=" + base, "OS_AUTH_TYPE=none", "LC_ALL=C.UTF-8"}
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "OS_"), strings.HasPrefix(kv, "ANVIL_"), strings.HasPrefix(kv, "LC_ALL="):
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+binDir+string(os.PathListSeparator)+kv[len("PATH="):])
		default:
			env = append(env, kv)
		}
	}
	return env
}

// anvil runs the CLI and fails the test unless it exits 0.
func anvil(t *testing.T, base string, args ...string) string {
	t.Helper()
	r := run(t, base, "", anvilBin, args...)
	if r.code != 0 {
		t.Fatalf("anvil %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// apiCall sends one request to the API at the latest microversion.
func apiCall(t *testing.T, base, method, path string, body any) (int, []byte) {
	t.Helper()
	r := testbin.Call(t, "latest", method, base+path, body)
	return r.Status, r.Body
}

// listNodes returns every node with the given fields.
func listNodes(t *testing.T, base, fields string) []map[string]any {
	t.Helper()
	var all []map[string]any
	path := "/v1/nodes?limit=1000&fields=" + fields
	for range 100 {
		status, data := apiCall(t, base, http.MethodGet, path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d: %s", path, status, data)
		}
		var page struct {
			Nodes []map[string]any `json:"nodes"`
			Next  string           `json:"next"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Nodes...)
		if page.Next == "" {
			return all
		}
		path = page.Next[strings.Index(page.Next, "/v1/"):]
	}
	t.Fatal("too many pages")
	return nil
}
