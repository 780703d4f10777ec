package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var termSignal os.Signal = syscall.SIGTERM

// childAttr makes the kernel kill anvil if the benchmark process dies, so an
// interrupted run leaves no server behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// procMemory returns VmRSS and VmHWM (peak RSS) of pid in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatus(string(b))
}

// parseStatus reads VmRSS and VmHWM ("VmRSS:   12345 kB") from /proc/PID/status.
func parseStatus(status string) (rss, hwm int64, err error) {
	rss, hwm = -1, -1
	for line := range strings.SplitSeq(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", key, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss < 0 || hwm < 0 {
		return 0, 0, fmt.Errorf("no VmRSS/VmHWM in /proc status")
	}
	return rss, hwm, nil
}

func TestParseStatus(t *testing.T) {
	rss, hwm, err := parseStatus("Name:\tanvil\nVmPeak:\t 1000 kB\nVmHWM:\t   30720 kB\nVmRSS:\t   20480 kB\nThreads:\t8\n")
	if err != nil || rss != 20<<20 || hwm != 30<<20 {
		t.Fatalf("parseStatus = %d, %d, %v; want 20 MiB, 30 MiB", rss, hwm, err)
	}
	if _, _, err := parseStatus("Name:\tanvil\n"); err == nil {
		t.Fatal("parseStatus without VmRSS: no error")
	}
}

// procCPU returns the CPU time (user + system) pid has used so far, from
// /proc/PID/stat (in USER_HZ = 100 ticks per second on Linux).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

func parseStat(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state); utime is 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

func TestParseStat(t *testing.T) {
	d, err := parseStat("1234 (anvil serve) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0")
	if err != nil || d != 3*time.Second {
		t.Fatalf("parseStat = %v, %v; want 3s", d, err)
	}
}
