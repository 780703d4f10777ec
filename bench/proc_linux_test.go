package bench

import (
	"os"
	"syscall"
)

var termSignal os.Signal = syscall.SIGTERM

// childAttr makes the kernel kill anvil if the benchmark process dies, so an
// interrupted run leaves no server behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
