package scale

import (
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// startDeploy creates a fake node whose deploy takes delay seconds and starts
// its deploy; it returns the node's UUID once the node is deploying.
func startDeploy(t *testing.T, base, name, delay string) string {
	t.Helper()
	n := testbin.MustCall(t, http.StatusCreated, http.MethodPost, base+"/v1/nodes", map[string]any{
		"driver": "fake-hardware", "name": name, "driver_info": map[string]any{"fake_deploy_delay": delay}}).JSON(t)
	id := n["uuid"].(string)
	for _, step := range []struct{ verb, state string }{{"manage", "manageable"}, {"provide", "available"}} {
		testbin.MustCall(t, http.StatusAccepted, http.MethodPut, base+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": step.verb})
		testbin.WaitState(t, base, id, step.state, 0)
	}
	testbin.MustCall(t, http.StatusAccepted, http.MethodPut, base+"/v1/nodes/"+id+"/states/provision", map[string]any{"target": "active"})
	return id
}

// duplicateRefused runs a first server on database with a deploy in flight,
// then a second with the same --host-id: the second must exit non-zero with
// one line naming the host and --host-id, and the deploy must finish.
func duplicateRefused(t *testing.T, database string) {
	base, _ := testbin.ServeOn(t, anvilBin, database, "twin", "--automated-clean=false")
	id := startDeploy(t, base, "busy", "3")
	if got := testbin.GetNode(t, base, id)["provision_state"]; got != "deploying" {
		t.Fatalf("node is %v, want deploying", got)
	}

	second := testbin.Start(t, "second anvil serve (twin)", anvilBin, "serve", "--listen", testbin.FreeAddr(t),
		"--database", database, "--host-id", "twin")
	deadline := time.Now().Add(testbin.ReadyTimeout)
	for time.Now().Before(deadline) {
		if strings.Contains(second.Logs.String(), "anvil: ") {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	err := second.Stop(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second server: exit %v, want status 1; output:\n%s", err, second.Logs)
	}
	out := strings.TrimSpace(second.Logs.String())
	if strings.Count(out, "\n") != 0 || !strings.HasPrefix(out, `anvil: conductor "twin" is already running`) ||
		!strings.Contains(out, "--host-id") || !strings.Contains(out, "last heartbeat 20") {
		t.Fatalf("second server's output is not the one-line refusal:\n%s", out)
	}

	n := testbin.WaitState(t, base, id, "active", 20*time.Second)
	if n["last_error"] != nil {
		t.Fatalf("deploy finished with last_error %v", n["last_error"])
	}

	// A distinct name is the override, and it is accepted beside the first.
	if !strings.HasPrefix(database, "postgres") {
		return // SQLite: one writer is enough for this test
	}
	other, _ := testbin.ServeOn(t, anvilBin, database, "twin-2")
	testbin.GetNode(t, other, id)
}

func TestDuplicateHostRefusedSQLite(t *testing.T) {
	duplicateRefused(t, filepath.Join(t.TempDir(), "anvil.db"))
}

func TestDuplicateHostRefusedPostgres(t *testing.T) {
	duplicateRefused(t, pg.URL(t))
}
