package testbin

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestRefusedAddr: a connection to the address is refused, and a listener
// cannot be given its port while the test holds it.
func TestRefusedAddr(t *testing.T) {
	addr := RefusedAddr(t)
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener was given %s while it is held", addr)
	}
}
