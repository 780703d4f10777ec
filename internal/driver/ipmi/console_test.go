package ipmi_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// readFor reads r until its output contains want (10 s at most).
func readFor(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	got := make(chan string, 1)
	var all strings.Builder
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := r.Read(buf)
			all.Write(buf[:n])
			if strings.Contains(all.String(), want) || err != nil {
				got <- all.String()
				return
			}
		}
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, want) {
			t.Fatalf("console output %q, want %q", s, want)
		}
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q on the console", want)
		return ""
	}
}

// TestSOLThroughIPMISim: the console interface activates SOL on OpenIPMI's
// ipmi_sim, whose SOL is a serial peer on TCP: the peer's output reaches
// the reader, keystrokes reach the peer, and after Close a new console can
// be opened (the payload was deactivated).
func TestSOLThroughIPMISim(t *testing.T) {
	serial := ipmisim.NewSerial(t, "anvil-sol login: ")
	port := ipmisim.StartSOL(t, "anvil-sol", testPassword, "tcp:"+serial.Addr)
	d := fastDriver()
	con := d.Console(ipmi.SOLName)
	n := ipmiNode("127.0.0.1", port, testPassword)
	if err := con.Validate(&driver.Task{Node: n}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := con.OpenConsole(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	serial.Write([]byte("booting\r\n")) // in case the banner went before SOL was active
	readFor(t, c, "booting")
	if _, err := c.Write([]byte("root\r")); err != nil {
		t.Fatal(err)
	}
	readFor(t, c, "echo: root")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := con.OpenConsole(ctx, n)
	if err != nil {
		t.Fatalf("reopening after close: %v", err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("again\r")); err != nil {
		t.Fatal(err)
	}
	readFor(t, c2, "echo: again")
}

func TestSOLWrongPassword(t *testing.T) {
	serial := ipmisim.NewSerial(t, "x")
	port := ipmisim.StartSOL(t, "anvil-sol", testPassword, "tcp:"+serial.Addr)
	_, err := fastDriver().Console(ipmi.SOLName).OpenConsole(context.Background(), ipmiNode("127.0.0.1", port, "wrong-password"))
	if err == nil {
		t.Fatal("opened a console with a wrong password")
	}
	if strings.Contains(err.Error(), "wrong-password") || strings.Contains(err.Error(), testPassword) {
		t.Fatalf("error shows the password: %v", err)
	}
}
