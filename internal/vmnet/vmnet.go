// Package vmnet puts a DHCP server on a qemu VM's network from the host,
// without root, a tap device or a bridge: qemu's `-netdev socket,udp=`
// sends every Ethernet frame of a hub the VM's NIC sits on as one UDP
// datagram to a loopback port, and takes frames back the same way. A
// [Link] is that port: it hands DHCP requests (IPv4 UDP to port 67) to a
// callback and puts answers on the hub as broadcast frames. qemu's user
// networking (slirp, on the same hub) still gives the VM its address and
// carries its TCP; the Link adds the second DHCP server a site network
// with a proxyDHCP has, so UEFI firmware sees the boot file answer its
// own DHCP client asks for ("HTTPClient"). Used by the BMC emulator
// (internal/bmcemu, Redfish HttpBootUri) and the VM tests.
package vmnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// Link is one end of a qemu socket netdev.
type Link struct {
	conn *net.UDPConn
	qemu *net.UDPAddr
	// SrcMAC and SrcIP are the source of the answers put on the hub.
	SrcMAC net.HardwareAddr
	SrcIP  net.IP
}

// Listen binds the link's end on 127.0.0.1 and picks a free port for
// qemu's end (qemu binds it when it starts).
func Listen(srcIP net.IP) (*Link, error) {
	if srcIP.To4() == nil {
		return nil, fmt.Errorf("vmnet: source address %v is not IPv4", srcIP)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("vmnet: %w", err)
	}
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("vmnet: %w", err)
	}
	qemu := probe.LocalAddr().(*net.UDPAddr)
	probe.Close()
	ip := srcIP.To4()
	return &Link{conn: conn, qemu: qemu, SrcIP: ip,
		SrcMAC: net.HardwareAddr{0x52, 0x55, ip[0], ip[1], ip[2], ip[3]}}, nil
}

// Netdev is the qemu -netdev value of the link's other end, with id.
func (l *Link) Netdev(id string) string {
	return fmt.Sprintf("socket,id=%s,udp=%s,localaddr=%s", id, l.conn.LocalAddr(), l.qemu)
}

// Close stops Serve.
func (l *Link) Close() error { return l.conn.Close() }

// Serve calls onRequest with the DHCP payload of every DHCP request on the
// hub, until the link is closed (then it returns nil).
func (l *Link) Serve(onRequest func(payload []byte)) error {
	buf := make([]byte, 65536)
	for {
		n, _, err := l.conn.ReadFromUDP(buf)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("vmnet: %w", err)
		}
		if p, ok := DHCPRequest(buf[:n]); ok {
			onRequest(append([]byte(nil), p...))
		}
	}
}

// Reply puts a DHCP answer on the hub, broadcast to the clients' port 68.
func (l *Link) Reply(payload []byte) error {
	_, err := l.conn.WriteToUDP(ReplyFrame(payload, l.SrcMAC, l.SrcIP), l.qemu)
	return err
}

// DHCPRequest returns the DHCP message of an Ethernet frame carrying an
// IPv4 UDP datagram to port 67.
func DHCPRequest(f []byte) ([]byte, bool) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return nil, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 {
		return nil, false
	}
	udp := ip[ihl:]
	if binary.BigEndian.Uint16(udp[2:4]) != 67 {
		return nil, false
	}
	end := min(int(binary.BigEndian.Uint16(udp[4:6])), len(udp))
	if end <= 8 {
		return nil, false
	}
	return udp[8:end], true
}

// ReplyFrame wraps a DHCP answer in a broadcast Ethernet/IPv4/UDP frame
// (port 67 → 68; UDP checksum 0: none).
func ReplyFrame(payload []byte, srcMAC net.HardwareAddr, srcIP net.IP) []byte {
	frame := make([]byte, 14+20+8+len(payload))
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], srcMAC)
	binary.BigEndian.PutUint16(frame[12:14], 0x0800)
	h := frame[14:34]
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:4], uint16(20+8+len(payload)))
	h[8], h[9] = 64, 17
	copy(h[12:16], srcIP.To4())
	copy(h[16:20], net.IPv4bcast.To4())
	binary.BigEndian.PutUint16(h[10:12], checksum(h))
	u := frame[34:42]
	binary.BigEndian.PutUint16(u[0:2], 67)
	binary.BigEndian.PutUint16(u[2:4], 68)
	binary.BigEndian.PutUint16(u[4:6], uint16(8+len(payload)))
	copy(frame[42:], payload)
	return frame
}

// checksum is the IPv4 header checksum.
func checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
