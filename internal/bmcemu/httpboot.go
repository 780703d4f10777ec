package bmcemu

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/insomniacslk/dhcp/dhcpv4"

	"github.com/anvil-metal/anvil/internal/boot"
	"github.com/anvil-metal/anvil/internal/vmnet"
)

// UEFI HTTP boot (Redfish boot source override UefiHttp with
// Boot.HttpBootUri, what Ironic's redfish-https boot interface sets).
//
// A real BMC hands the URI to the host's UEFI firmware, which downloads
// and boots it (an ISO from a RAM disk, an EFI binary directly). The
// emulator does the same with the firmware it has: in QEMU mode a machine
// booting UefiHttp runs OVMF (UEFI mode and QEMUConfig.UEFIFirmware are
// needed; otherwise the VM boots its disk, as a BIOS machine would fail
// to HTTP boot) with its NIC's option ROM and PXE off, so the firmware's
// own HTTP boot runs, and the emulator answers that firmware's DHCP
// ("HTTPClient", on a vmnet.Link on the VM's network) with the URI —
// where a real BMC writes it into the firmware's boot option. The VM's
// address still comes from qemu's user networking. Without QEMU, a
// UefiHttp boot starts the agent (Config.Agent) as a network boot does.

// httpBootDevice is a UefiHttp boot in Ironic's words (boot_devices.UEFIHTTP).
const httpBootDevice = "uefihttp"

// httpBootServer is the address the emulator's DHCP answers come from on
// the VM's network (qemu's user network uses .2, .3 and .15).
var httpBootServer = net.IPv4(10, 0, 2, 5)

// checkHTTPBootURI refuses an HttpBootUri that is not an absolute http(s)
// URL; nil (absent) and "" (clear it) are accepted.
func checkHTTPBootURI(uri *string) error {
	if uri == nil || *uri == "" {
		return nil
	}
	u, err := url.Parse(*uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(*uri, " \t\r\n") {
		return fmt.Errorf("The value %q for the property HttpBootUri is not a valid http(s) URI.", *uri)
	}
	return nil
}

// setHTTPBootURI stores a checked HttpBootUri; nil leaves it as it is.
func (m *Machine) setHTTPBootURI(uri *string) {
	if uri == nil {
		return
	}
	m.mu.Lock()
	m.httpBootURI = *uri
	m.mu.Unlock()
}

// HTTPBootURI is the machine's Boot.HttpBootUri.
func (m *Machine) HTTPBootURI() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.httpBootURI
}

// httpBootNet starts the link that answers the VM's UEFI HTTP boot DHCP
// with uri and returns it with the qemu arguments of the VM's network: a
// hub joining the user network (netdev n0), the link and the NIC (no
// option ROM, first boot device), and PXE switched off in OVMF.
func (v vmFleet) httpBootNet(m *Machine, uri string) (*vmnet.Link, []string, error) {
	e := v.e
	link, err := vmnet.Listen(httpBootServer)
	if err != nil {
		return nil, nil, err
	}
	mac, err := net.ParseMAC(m.HW.MACs[0])
	if err != nil {
		link.Close()
		return nil, nil, err
	}
	go func() {
		_ = link.Serve(func(p []byte) {
			req, err := dhcpv4.FromBytes(p)
			if err != nil || req.OpCode != dhcpv4.OpcodeBootRequest || req.ClientHWAddr.String() != mac.String() || !boot.IsHTTPClient(req) {
				return
			}
			reply, err := boot.HTTPBootAnswer(req, httpBootServer, uri)
			if err != nil || reply == nil {
				return
			}
			if err := link.Reply(reply.ToBytes()); err != nil {
				e.log.Warn("answering the VM's UEFI HTTP boot DHCP", "machine", m.ID, "err", err)
				return
			}
			e.log.Info("UEFI HTTP boot: handed the firmware HttpBootUri", "machine", m.ID, "type", reply.MessageType().String(), "uri", uri)
		})
	}()
	args := []string{
		"-netdev", "hubport,id=h1,hubid=0,netdev=n0",
		"-netdev", link.Netdev("hb0"), "-netdev", "hubport,id=h2,hubid=0,netdev=hb0",
		"-netdev", "hubport,id=h0,hubid=0",
		"-device", fmt.Sprintf("virtio-net-pci,netdev=h0,mac=%s,romfile=,bootindex=1", m.HW.MACs[0]),
		"-fw_cfg", "name=opt/org.tianocore/IPv4PXESupport,string=n",
		"-fw_cfg", "name=opt/org.tianocore/IPv6PXESupport,string=n",
	}
	return link, args, nil
}
