package testbin

import (
	"fmt"
	"syscall"
	"testing"
)

// RefusedAddr is a loopback TCP address ("127.0.0.1:port") where a
// connection is refused: a socket bound to the port that never listens
// holds it until t ends, so no other server — of this test, or of another
// package's test running meanwhile — can be given the port. (A listener
// closed at once frees the port, and something else may then answer on
// it.)
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
