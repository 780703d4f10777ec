package pgtest

import "syscall"

// sysProcAttr runs the child as cred (nil: as us) and has the kernel stop it
// (immediate shutdown) if the test binary dies without calling Stop.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
