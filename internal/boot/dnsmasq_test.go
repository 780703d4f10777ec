package boot

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var dnsmasqOpts = DnsmasqOptions{
	Interface: "eth1", Subnet: "10.0.2.0/24", HTTPURL: "http://10.0.2.100:6385/boot/", ServerIP: "10.0.2.100",
}

func TestDnsmasqConfigRenders(t *testing.T) {
	var buf bytes.Buffer
	if err := DnsmasqConfig(&buf, dnsmasqOpts); err != nil {
		t.Fatal(err)
	}
	conf := buf.String()
	for _, line := range []string{
		"port=0",
		"interface=eth1",
		"dhcp-range=10.0.2.0,proxy,255.255.255.0",
		"enable-tftp",
		"tftp-root=/usr/lib/ipxe",
		"dhcp-userclass=set:ipxe,iPXE",
		"dhcp-match=set:ipxe,175",
		`pxe-service=tag:!ipxe,x86PC,"Anvil: load iPXE",undionly.kpxe,10.0.2.100`,
		"dhcp-boot=tag:efi64,tag:!ipxe,ipxe.efi,,10.0.2.100",
		"dhcp-boot=tag:ipxe,http://10.0.2.100:6385/boot/boot.ipxe,,10.0.2.100",
	} {
		if !strings.Contains(conf, "\n"+line+"\n") {
			t.Errorf("config lacks the line %q:\n%s", line, conf)
		}
	}
	buf.Reset()
	opts := dnsmasqOpts
	opts.Interface, opts.Subnet, opts.EFIBinary, opts.TFTPRoot = "", "10.0.2.0", SNPOnlyBinary, "/srv/tftp"
	opts.ServerIP, opts.HTTPURL = "", "http://10.0.2.7:8080/boot" // server IP from the URL
	if err := DnsmasqConfig(&buf, opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ndhcp-range=10.0.2.0,proxy\n", ",snponly.efi,,10.0.2.7\n", "tftp-root=/srv/tftp\n", "dhcp-boot=tag:ipxe,http://10.0.2.7:8080/boot/boot.ipxe,,10.0.2.7\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("config lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "interface=") {
		t.Error("interface= without an interface")
	}
}

func TestDnsmasqConfigRefusesBadOptions(t *testing.T) {
	for name, mutate := range map[string]func(*DnsmasqOptions){
		"no subnet":        func(o *DnsmasqOptions) { o.Subnet = "" },
		"IPv6 subnet":      func(o *DnsmasqOptions) { o.Subnet = "fd00::/64" },
		"bad subnet":       func(o *DnsmasqOptions) { o.Subnet = "10.0.2/24" },
		"relative URL":     func(o *DnsmasqOptions) { o.HTTPURL = "/boot" },
		"URL with comma":   func(o *DnsmasqOptions) { o.HTTPURL = "http://h/a,b" },
		"no server IP":     func(o *DnsmasqOptions) { o.ServerIP, o.HTTPURL = "", "http://boot.example/boot" },
		"IPv6 server IP":   func(o *DnsmasqOptions) { o.ServerIP = "fd00::1" },
		"interface inject": func(o *DnsmasqOptions) { o.Interface = "eth0\ndhcp-script=/bin/x" },
		"relative root":    func(o *DnsmasqOptions) { o.TFTPRoot = "tftp" },
		"root with comma":  func(o *DnsmasqOptions) { o.TFTPRoot = "/a,b" },
		"grub":             func(o *DnsmasqOptions) { o.EFIBinary = "grubx64.efi" },
	} {
		opts := dnsmasqOpts
		mutate(&opts)
		if err := DnsmasqConfig(&bytes.Buffer{}, opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func dnsmasqBinary(t *testing.T) string {
	t.Helper()
	return testbin.Need(t, "dnsmasq", "dnsmasq-base")
}

func TestDnsmasqAcceptsConfig(t *testing.T) {
	bin := dnsmasqBinary(t)
	path := filepath.Join(t.TempDir(), "dnsmasq.conf")
	var buf bytes.Buffer
	if err := DnsmasqConfig(&buf, dnsmasqOpts); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o600)
	out, err := exec.Command(bin, "--test", "-C", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "syntax check OK") {
		t.Fatalf("dnsmasq --test: %v: %s", err, out)
	}
}

// TestDnsmasqAnswersAsIntended runs dnsmasq with the rendered config on
// the loopback interface (DHCP on unprivileged alternate ports, TFTP left
// out so nothing binds port 69) and sends it PXE and iPXE packets.
func TestDnsmasqAnswersAsIntended(t *testing.T) {
	bin := dnsmasqBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("running dnsmasq's DHCP needs root")
	}
	// dnsmasq answers proxy requests by broadcast: listen on the wildcard
	// address (the packets stay on the loopback interface).
	client, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	serverPort := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	clientPort := client.LocalAddr().(*net.UDPAddr).Port

	var buf bytes.Buffer
	err = DnsmasqConfig(&buf, DnsmasqOptions{Interface: "lo", Subnet: "127.0.0.0/8", HTTPURL: "http://127.0.0.1:6385/boot", ServerIP: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var conf []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(line, "enable-tftp") && !strings.HasPrefix(line, "tftp-root") {
			conf = append(conf, line)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "dnsmasq.conf")
	os.WriteFile(path, []byte(strings.Join(conf, "\n")), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--no-daemon", "-C", path, "--pid-file=", "--user=root",
		"--dhcp-leasefile="+filepath.Join(dir, "leases"),
		"--dhcp-alternate-port="+strconv.Itoa(serverPort)+","+strconv.Itoa(clientPort))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("dnsmasq log:\n%s", log.String())
		}
	})
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: serverPort}
	ask := func(mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
		m, err := dhcpv4.NewDiscovery(knownMAC, mods...)
		if err != nil {
			t.Fatal(err)
		}
		// Retry while dnsmasq starts; the answer must carry our xid.
		buf := make([]byte, 1500)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			client.WriteTo(m.ToBytes(), server)
			client.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			for {
				n, _, err := client.ReadFrom(buf)
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if r, err := dhcpv4.FromBytes(buf[:n]); err == nil && r.TransactionID == m.TransactionID {
					return r
				}
			}
		}
		t.Fatal("no answer from dnsmasq")
		return nil
	}
	class := func(arch string) dhcpv4.Modifier {
		return dhcpv4.WithOption(dhcpv4.OptClassIdentifier("PXEClient:Arch:" + arch + ":UNDI:003016"))
	}
	cases := []struct {
		name string
		mods []dhcpv4.Modifier
		file string
	}{
		{"UEFI firmware, arch 7", []dhcpv4.Modifier{class("00007"), withArch(iana.EFI_X86_64)}, "ipxe.efi"},
		{"UEFI firmware, arch 9", []dhcpv4.Modifier{class("00009"), withArch(iana.EFI_BC)}, "ipxe.efi"},
		{"iPXE on UEFI", []dhcpv4.Modifier{class("00007"), asIPXE, withArch(iana.EFI_X86_64)}, "http://127.0.0.1:6385/boot/boot.ipxe"},
		{"iPXE on BIOS", []dhcpv4.Modifier{class("00000"), asIPXE, withArch(iana.INTEL_X86PC)}, "http://127.0.0.1:6385/boot/boot.ipxe"},
	}
	for _, tc := range cases {
		r := ask(tc.mods...)
		if r.BootFileName != tc.file || !r.ServerIPAddr.Equal(net.IPv4(127, 0, 0, 1)) || !r.YourIPAddr.IsUnspecified() {
			t.Errorf("%s: file %q, siaddr %v, yiaddr %v; want %q from 127.0.0.1 and no address", tc.name, r.BootFileName, r.ServerIPAddr, r.YourIPAddr, tc.file)
		}
	}
	// BIOS firmware gets dnsmasq's PXE menu (option 43) naming our entry;
	// it then asks dnsmasq on port 4011 for the file.
	r := ask(class("00000"), withArch(iana.INTEL_X86PC))
	if !bytes.Contains(r.GetOneOption(dhcpv4.OptionVendorSpecificInformation), []byte("Anvil: load iPXE")) {
		t.Errorf("BIOS PXE: no menu entry in option 43: %q", r.GetOneOption(dhcpv4.OptionVendorSpecificInformation))
	}
}
