//go:build !linux

package agent

import "errors"

// mountEFIVars: efivarfs is Linux's.
func mountEFIVars(string) error { return errors.New("efivarfs is Linux-only") }
