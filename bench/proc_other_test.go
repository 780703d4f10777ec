//go:build !linux

package bench

import (
	"os"
	"syscall"
)

var termSignal os.Signal = syscall.SIGTERM

func childAttr() *syscall.SysProcAttr { return nil }
