//go:build !linux

package bench

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var termSignal os.Signal = syscall.SIGTERM

func childAttr() *syscall.SysProcAttr { return nil }

func procMemory(int) (rss, hwm int64, err error) {
	return 0, 0, errors.New("RSS is read from /proc/PID/status: Linux only")
}

func procCPU(int) (time.Duration, error) {
	return 0, errors.New("CPU time is read from /proc/PID/stat: Linux only")
}
