//go:build !unix

package boot

import "syscall"

// enableBroadcast is a no-op where SO_BROADCAST is not set this way.
func enableBroadcast(_, _ string, _ syscall.RawConn) error { return nil }
