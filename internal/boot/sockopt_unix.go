//go:build unix

package boot

import "syscall"

// enableBroadcast sets SO_BROADCAST, so answers can reach clients that have
// no address yet.
func enableBroadcast(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
	})
	if err != nil {
		return err
	}
	return serr
}
