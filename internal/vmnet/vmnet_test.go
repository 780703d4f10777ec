package vmnet

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// TestLinkRoundTrip plays qemu's end: a DHCP request frame reaches the
// callback as its payload, other frames do not, and Reply arrives as a
// broadcast frame whose IPv4 header checksum verifies and whose payload
// DHCPRequest's inverse finds.
func TestLinkRoundTrip(t *testing.T) {
	l, err := Listen(net.IPv4(10, 0, 2, 100))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 4)
	done := make(chan error, 1)
	go func() { done <- l.Serve(func(p []byte) { got <- p }) }()
	qemu, err := net.ListenUDP("udp4", l.qemu)
	if err != nil {
		t.Fatal(err)
	}
	defer qemu.Close()

	req := []byte("DHCPDISCOVER-payload")
	frame := ReplyFrame(req, net.HardwareAddr{0x52, 0x54, 0, 0, 0, 1}, net.IPv4zero)
	frame[34], frame[35] = 0, 68                                                     // from port 68 ...
	frame[36], frame[37] = 0, 67                                                     // ... to 67: a client's request
	other := ReplyFrame(req, net.HardwareAddr{0x52, 0x54, 0, 0, 0, 1}, net.IPv4zero) // to port 68: an answer, not a request
	for _, f := range [][]byte{other, []byte("short"), frame} {
		if _, err := qemu.WriteToUDP(f, l.conn.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case p := <-got:
		if !bytes.Equal(p, req) {
			t.Errorf("payload %q, want %q", p, req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no request passed on")
	}
	select {
	case p := <-got:
		t.Errorf("a second frame passed on: %q", p)
	case <-time.After(100 * time.Millisecond):
	}

	if err := l.Reply([]byte("OFFER")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	qemu.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := qemu.ReadFromUDP(buf)
	if err != nil {
		t.Fatal(err)
	}
	f := buf[:n]
	if !bytes.Equal(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) || !bytes.Equal(f[6:12], l.SrcMAC) {
		t.Errorf("frame addresses %x → %x", f[6:12], f[0:6])
	}
	if checksum(f[14:34]) != 0 {
		t.Error("IPv4 header checksum does not verify")
	}
	if !net.IP(f[26:30]).Equal(net.IPv4(10, 0, 2, 100)) || !net.IP(f[30:34]).Equal(net.IPv4bcast) {
		t.Errorf("IPv4 %v → %v", net.IP(f[26:30]), net.IP(f[30:34]))
	}
	if !bytes.Equal(f[42:], []byte("OFFER")) || f[34] != 0 || f[35] != 67 || f[36] != 0 || f[37] != 68 {
		t.Errorf("UDP ports or payload wrong: % x", f[34:])
	}
	l.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
}
