package testbin

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	rss, hwm, err := parseStatus("Name:\tanvil\nVmPeak:\t 1000 kB\nVmHWM:\t   30720 kB\nVmRSS:\t   20480 kB\nThreads:\t8\n")
	if err != nil || rss != 20<<20 || hwm != 30<<20 {
		t.Fatalf("parseStatus = %d, %d, %v; want 20 MiB, 30 MiB", rss, hwm, err)
	}
	if _, _, err := parseStatus("Name:\tanvil\n"); err == nil {
		t.Fatal("parseStatus without VmRSS: no error")
	}
}

func TestParseStat(t *testing.T) {
	st, err := parseStat("1234 (anvil serve) S 77 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0")
	if err != nil || st.cpu != 3*time.Second || st.ppid != 77 || st.comm != "anvil serve" {
		t.Fatalf("parseStat = %+v, %v; want anvil serve, ppid 77, 3s", st, err)
	}
	if _, err := parseStat("1234 anvil S 1"); err == nil {
		t.Fatal("parseStat without (comm): no error")
	}
}

// TestProcTreeCPU: a child this test starts is found under this process by
// its command name, and nothing is found under an unrelated root.
func TestProcTreeCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	p := Start(t, "sleep", Need(t, "sleep", "coreutils"), "30")
	_, n, err := ProcTreeCPU(os.Getpid(), "sleep")
	if err != nil || n != 1 {
		t.Fatalf("ProcTreeCPU(self, sleep) = %d processes, %v; want 1", n, err)
	}
	if _, n, _ := ProcTreeCPU(p.Cmd.Process.Pid, "sleep"); n != 0 {
		t.Fatalf("ProcTreeCPU(sleep's pid, sleep) = %d processes, want 0", n)
	}
}
