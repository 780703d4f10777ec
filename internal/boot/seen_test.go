package boot

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"

	"github.com/anvil-metal/anvil/internal/model"
)

// find returns the first event of service with status (and file, if set).
func find(evs []model.BootEvent, service, status, file string) *model.BootEvent {
	for i, e := range evs {
		if e.Service == service && e.Status == status && (file == "" || e.File == file) {
			return &evs[i]
		}
	}
	return nil
}

// TestSeenProxyDHCPAndTFTP: the offer and ack to a known machine, and its
// TFTP fetches (tied to it by the address its REQUEST asked for), are in
// its record with file, status and bytes; an unknown MAC's discover is
// recorded under that MAC only.
func TestSeenProxyDHCPAndTFTP(t *testing.T) {
	h := newDHCPHarness(t, "")
	if err := h.svc.PublishLocalBoot(context.Background(), "n1", []string{knownMAC.String()}); err != nil {
		t.Fatal(err)
	}
	offer := h.exchange(t, pxeDiscover(t, knownMAC, asPXE, withArch(iana.INTEL_X86PC)))
	req, err := dhcpv4.NewRequestFromOffer(offer, asPXE, withArch(iana.INTEL_X86PC),
		dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(127, 0, 0, 1))))
	if err != nil {
		t.Fatal(err)
	}
	h.exchange(t, req)
	if _, err := h.client.WriteTo(pxeDiscover(t, unknownMAC, asPXE).ToBytes(), h.server); err != nil {
		t.Fatal(err)
	}

	dir, binary := tftpFixture(t)
	srv, err := NewTFTP(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv.Seen = h.svc.SeenLog()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, conn)
	c := tftpClient(t, conn.LocalAddr().String())
	wt, err := c.Receive("undionly.kpxe", "octet")
	if err != nil {
		t.Fatal(err)
	}
	var sink strings.Builder
	wt.WriteTo(&sink)
	if _, err := c.Receive("pxelinux.0", "octet"); err == nil {
		t.Fatal("a missing file was served")
	}

	var evs []model.BootEvent
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) { // the server records after the transfer ends
		evs = h.svc.Seen("n1", []string{strings.ToUpper(knownMAC.String())})
		if find(evs, "tftp", "not found", "pxelinux.0") != nil && find(evs, "tftp", "sent", "") != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := find(evs, "proxydhcp", "offer", BIOSBinary); e == nil || e.MAC != knownMAC.String() {
		t.Errorf("no offer of %s recorded: %+v", BIOSBinary, evs)
	}
	if find(evs, "proxydhcp", "ack", BIOSBinary) == nil {
		t.Errorf("no ack recorded: %+v", evs)
	}
	if e := find(evs, "tftp", "sent", "undionly.kpxe"); e == nil || e.Bytes != int64(len(binary)) {
		t.Errorf("TFTP fetch not recorded with its size %d: %+v", len(binary), evs)
	}
	if find(evs, "tftp", "not found", "pxelinux.0") == nil {
		t.Errorf("refused TFTP fetch not recorded: %+v", evs)
	}
	for _, e := range evs {
		if e.MAC == unknownMAC.String() {
			t.Errorf("another machine's request in n1's record: %+v", e)
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(h.svc.Seen("", []string{unknownMAC.String()})) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if u := h.svc.Seen("", []string{unknownMAC.String()}); len(u) != 1 || u[0].Status != "ignored" {
		t.Errorf("the unknown MAC's discover: %+v", u)
	}
}

// TestSeenHTTPFetches: the per-MAC script and the kernel are recorded with
// status and size under the node; a script asked for by an unknown MAC is
// a 404 under that MAC.
func TestSeenHTTPFetches(t *testing.T) {
	f := newFixture(t)
	mac := "52:54:00:aa:bb:01"
	if err := f.svc.PublishRamdisk(context.Background(), "node-1", []string{mac}, f.rd); err != nil {
		t.Fatal(err)
	}
	_, kernel, _, _ := f.scriptURLs(t, mac)
	if resp, _ := get(t, "GET", kernel); resp.StatusCode != 200 {
		t.Fatalf("kernel: %s", resp.Status)
	}
	get(t, "GET", f.bootURL()+macPath("52:54:00:aa:bb:99"))
	evs := f.svc.Seen("node-1", []string{mac})
	if e := find(evs, "http", "200", macPrefix+mac); e == nil || e.Bytes == 0 || e.Node != "node-1" {
		t.Errorf("script fetch: %+v", evs)
	}
	if e := find(evs, "http", "200", kernelFile); e == nil || e.Bytes != int64(len(f.kernel)) {
		t.Errorf("kernel fetch with %d bytes: %+v", len(f.kernel), evs)
	}
	if find(evs, "http", "200", ramdiskFile) != nil {
		t.Errorf("a ramdisk fetch that never happened: %+v", evs)
	}
	if u := f.svc.Seen("", []string{"52:54:00:aa:bb:99"}); len(u) != 1 || u[0].Status != "404" {
		t.Errorf("unknown MAC's script: %+v", u)
	}
}
