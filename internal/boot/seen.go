package boot

import (
	"net"
	"slices"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// What the boot services saw, for a failed node's diagnosis: each
// proxyDHCP request and its answer, each TFTP and HTTP fetch with its
// status and size, kept in memory under the machine's MAC, its node and
// its IP address (TFTP knows only the address; a DHCP request naming the
// address it asks for ties the two), the last SeenPerKey of each of the
// seenKeys keys written most recently: about 21 MiB at the bound
// (BenchmarkSeenFull; a flood of requests from made-up MACs only evicts
// older keys).
const (
	SeenPerKey = 32
	seenKeys   = 4096
)

// NewSeen returns a bounded record for the boot services to share.
func NewSeen() *recent.Log[model.BootEvent] {
	return recent.New[model.BootEvent](SeenPerKey, seenKeys)
}

func ipKey(ip string) string { return "ip:" + ip }

// remoteIP is the address part of a host:port ("" when there is none).
func remoteIP(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return ""
	}
	return host
}

// see records ev under its MAC, node and remote address.
func (s *Service) see(ev model.BootEvent) {
	ev.Time = time.Now().UTC()
	keys := []string{ev.MAC, ev.Node}
	if ip := remoteIP(ev.Remote); ip != "" {
		keys = append(keys, ipKey(ip))
	}
	s.seen.Add(ev, keys...)
}

// Seen returns what the boot services saw of node and its MACs, oldest
// first: the events recorded under the node or one of the MACs, and the
// TFTP fetches from the addresses these machines used.
func (s *Service) Seen(node string, macs []string) []model.BootEvent {
	var out []model.BootEvent
	keys := []string{node}
	for _, m := range macs {
		if hw, err := net.ParseMAC(m); err == nil {
			keys = append(keys, hw.String())
		}
	}
	ips := map[string]bool{}
	for _, k := range keys {
		for _, ev := range s.seen.Get(k) {
			out = append(out, ev)
			if ip := remoteIP(ev.Remote); ip != "" {
				ips[ip] = true
			}
		}
	}
	// By address, only what knows no MAC or node (TFTP): a machine's
	// address may pass to another machine later.
	for ip := range ips {
		for _, ev := range s.seen.Get(ipKey(ip)) {
			if ev.MAC == "" && ev.Node == "" {
				out = append(out, ev)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b model.BootEvent) int { return a.Time.Compare(b.Time) })
	return slices.CompactFunc(out, func(a, b model.BootEvent) bool { return a == b })
}

// SeenLog is the record the services share (TFTP, which has no Service,
// records into it).
func (s *Service) SeenLog() *recent.Log[model.BootEvent] { return s.seen }
