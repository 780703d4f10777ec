package scale

import (
	"database/sql"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

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

// A server whose claim's session is terminated (as a PostgreSQL restart
// would) shuts down with an error rather than run on beside a process that
// may now claim its name.
func TestClaimLostStopsServer(t *testing.T) {
	db := pg.URL(t)
	// Started by hand: ServeOn would want a clean exit at cleanup.
	p := testbin.Start(t, "anvil serve (fragile)", anvilBin, "serve", "--listen", testbin.FreeAddr(t),
		"--database", db, "--host-id", "fragile", "--heartbeat-interval", "0.2")
	waitFor(t, "server ready", testbin.ReadyTimeout, func() bool {
		return strings.Contains(p.Logs.String(), "anvil: listening on")
	})
	admin, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND objid::int = hashtext(current_schema() || '/fragile')`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the claim's session: %d sessions, %v", n, err)
	}
	waitFor(t, "server stops", testbin.StopTimeout, func() bool {
		return strings.Contains(p.Logs.String(), "anvil: lost the claim")
	})
	var exit *exec.ExitError
	if err := p.Stop(t); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1; output:\n%s", err, p.Logs)
	}
	// The name is free again: a new process takes it.
	testbin.ServeOn(t, anvilBin, db, "fragile")
}
