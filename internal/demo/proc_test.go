package demo

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used, from
// /proc/self/stat (0 where there is none).
func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// rssBytes is this process's resident set (VmRSS), 0 where unknown.
func rssBytes() int64 { return procStatus("VmRSS:") }

// peakRSSBytes is this process's peak resident set (VmHWM).
func peakRSSBytes() int64 { return procStatus("VmHWM:") }

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field) {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
