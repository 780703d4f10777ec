//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs the child as cred (nil: as us).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
