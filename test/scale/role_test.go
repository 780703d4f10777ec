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

// refused runs `anvil serve` with args and wants exit status 1 and one
// line of output containing want.
func refused(t *testing.T, want string, args ...string) {
	t.Helper()
	p := testbin.Start(t, "anvil serve "+strings.Join(args, " "), anvilBin,
		append([]string{"serve", "--listen", testbin.FreeAddr(t)}, args...)...)
	deadline := time.Now().Add(testbin.ReadyTimeout)
	for !strings.Contains(p.Logs.String(), "anvil: ") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	err := p.Stop(t)
	var exit *exec.ExitError
	out := strings.TrimSpace(p.Logs.String())
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || strings.Contains(out, "\n") || !strings.Contains(out, want) {
		t.Fatalf("exit %v, output %q; want status 1 and one line with %q", err, out, want)
	}
}

func TestRoles(t *testing.T) {
	sqlite := filepath.Join(t.TempDir(), "anvil.db")
	refused(t, "--role conductor needs a postgres:// --database", "--database", sqlite, "--role", "conductor")
	refused(t, "--role must be all, conductor or api", "--database", sqlite, "--role", "worker")
	refused(t, "--role api needs a postgres:// --database", "--database", sqlite, "--role", "api")

	// A conductor-only process: /metrics and a probe answer, no Ironic API,
	// and it is registered as a conductor.
	db := pg.URL(t)
	c, _ := testbin.ServeOn(t, anvilBin, db, "only-conductor", "--role", "conductor", "--conductor-group", "rack-1")
	testbin.MustCall(t, http.StatusOK, http.MethodGet, c+"/metrics", nil)
	testbin.MustCall(t, http.StatusNotFound, http.MethodGet, c+"/v1/nodes", nil)
	a, _ := testbin.ServeOn(t, anvilBin, db, "api-and-conductor")
	cd := testbin.MustCall(t, http.StatusOK, http.MethodGet, a+"/v1/conductors/only-conductor", nil).JSON(t)
	if cd["alive"] != true || cd["conductor_group"] != "rack-1" {
		t.Fatalf("conductor-only process as the API sees it: %v", cd)
	}
}
