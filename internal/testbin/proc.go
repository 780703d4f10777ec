package testbin

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcMemory returns VmRSS and VmHWM (peak RSS) of pid in bytes, from
// /proc/PID/status (Linux only: elsewhere the read fails).
func ProcMemory(pid int) (rss, hwm int64, err error) {
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

// ProcCPU returns the CPU time (user + system) pid has used so far, from
// /proc/PID/stat (Linux only: elsewhere the read fails).
func ProcCPU(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	return st.cpu, err
}

// ProcTreeCPU adds up the CPU time used so far by the live descendants of
// root whose command name is comm (e.g. the "postgres" processes a test
// started), and how many there are.
func ProcTreeCPU(root int, comm string) (time.Duration, int, error) {
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(paths) == 0 {
		return 0, 0, fmt.Errorf("no /proc/PID/stat (Linux only): %v", err)
	}
	all := map[int]stat{}
	for _, p := range paths {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if st, err := readStat(pid); err == nil { // a process may end meanwhile
			all[pid] = st
		}
	}
	var total time.Duration
	n := 0
	for _, st := range all {
		if st.comm != comm {
			continue
		}
		for p := st.ppid; p > 1; p = all[p].ppid {
			if p == root {
				total += st.cpu
				n++
				break
			}
			if _, ok := all[p]; !ok {
				break
			}
		}
	}
	return total, n, nil
}

// stat is the part of /proc/PID/stat the helpers read.
type stat struct {
	comm string
	ppid int
	cpu  time.Duration // utime + stime
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	return parseStat(string(b))
}

// parseStat reads "PID (COMM) STATE PPID ..." with utime and stime (fields
// 14 and 15) in USER_HZ = 100 ticks per second, as on Linux.
func parseStat(s string) (stat, error) {
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return stat{}, fmt.Errorf("unexpected /proc stat %q", s)
	}
	f := strings.Fields(s[j+1:]) // f[0] is field 3 (state); ppid is 4, utime 14, stime 15
	if len(f) < 13 {
		return stat{}, fmt.Errorf("unexpected /proc stat %q", s)
	}
	st := stat{comm: s[i+1 : j]}
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, fmt.Errorf("/proc stat: %w", err)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return stat{}, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	st.cpu = time.Duration(ticks) * (time.Second / 100)
	return st, nil
}
