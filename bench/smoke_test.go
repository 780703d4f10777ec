package bench

import (
	"context"
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestHarness checks the harness end to end on a real server with a few
// nodes: create, list, and the whole enroll → active lifecycle. It builds and
// starts anvil, so it runs only with ANVIL_BENCH=1.
func TestHarness(t *testing.T) {
	if os.Getenv("ANVIL_BENCH") != "1" {
		t.Skip("set ANVIL_BENCH=1 to run the benchmark harness against a real anvil serve")
	}
	s := startServer(t, "smoke")
	t.Cleanup(s.stop)
	uuids := s.loadNodes(t, 5, 3)
	n, _, err := s.listAll(context.Background())
	if err != nil || n != 5 {
		t.Fatalf("listAll: %d nodes, %v", n, err)
	}
	if _, err := s.lifecycle(uuids, 2); err != nil {
		t.Fatalf("%v\n%s", err, s.logTail())
	}
	for _, u := range uuids {
		if err := s.waitState(context.Background(), u, "active"); err != nil {
			t.Fatal(err)
		}
	}
	if rss, hwm, err := testbin.ProcMemory(s.pid()); err == nil {
		t.Logf("anvil RSS %.1f MiB, peak %.1f MiB", float64(rss)/(1<<20), float64(hwm)/(1<<20))
	}
}
