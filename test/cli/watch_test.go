package cli_test

import (
	"strings"
	"testing"
)

// TestWatchUnknownNode: watching a node that does not exist fails at once
// with the 404 `node show` gives, instead of watching silently.
func TestWatchUnknownNode(t *testing.T) {
	base := startServer(t)
	show := run(t, base, "", anvilBin, "node", "show", "nod-01")
	watch := run(t, base, "", anvilBin, "node", "watch", "nod-01")
	want := "Node nod-01 could not be found. (HTTP 404)"
	if show.code != 1 || !strings.Contains(show.stderr, want) {
		t.Fatalf("node show: %+v", show)
	}
	if watch.code != 1 || !strings.Contains(watch.stderr, want) {
		t.Errorf("node watch: exit %d, stderr %q; want exit 1 and %q", watch.code, watch.stderr, want)
	}
}
