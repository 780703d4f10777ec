package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/ramdisk"
	"github.com/anvil-metal/anvil/internal/server"
	"github.com/anvil-metal/anvil/pkg/events"
)

// The guest side of the demo's VM network (qemu user mode, restrict=on):
// the API (and its boot endpoint) at guestAPIHost, the image at
// guestImageHost:80, the agent's command API on agentPort.
const (
	guestAPIHost   = "10.0.2.100"
	guestImageHost = "10.0.2.101"
	agentPort      = 9999
)

// DiskMarker is what the demo's image prints on a VM's serial console when
// the VM boots it from its disk (QEMU mode).
const DiskMarker = "ANVIL DEMO IMAGE BOOTED FROM DISK"

// QEMUImage is the demo's image in QEMU mode: Image with a first sector that
// prints DiskMarker when a BIOS boots it.
func QEMUImage() []byte {
	b := Image()
	copy(b, bmcemu.BootSector(DiskMarker))
	return b
}

// qemuSetup is what QEMU mode adds to the demo.
type qemuSetup struct {
	apiPort          int
	kernel, ramdisk  string
	guestAPI         string
	kernelParamsBase string
}

// prepareQEMU picks the API port (the guests' forward must know it before
// the server starts), fills in the server's network boot settings and
// builds (or finds) the deploy ramdisk.
func prepareQEMU(ctx context.Context, cfg *Config, sc *server.Config, dir string, out io.Writer) (*qemuSetup, error) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, fmt.Errorf("--qemu needs qemu-system-x86_64 (apt-get install qemu-system-x86): %w", err)
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	p, _ := strconv.Atoi(port)
	if p == 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		p = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cfg.Listen = net.JoinHostPort(host, strconv.Itoa(p))
		sc.Listen = cfg.Listen
	}
	q := &qemuSetup{apiPort: p, guestAPI: fmt.Sprintf("http://%s:%d", guestAPIHost, p)}
	sc.Network = server.BootConfig{HTTPURL: q.guestAPI + "/boot", Root: filepath.Join(dir, "boot"), PublicEndpoint: q.guestAPI}
	if cfg.VirtualMedia {
		// The BMC, on this host, downloads the ISO; the agent in it still
		// reaches the API as the guest sees it (PublicEndpoint).
		sc.Network.HTTPURL = fmt.Sprintf("http://127.0.0.1:%d/boot", p)
	}
	rd := cfg.Ramdisk
	if rd == "" {
		rd = filepath.Join(dir, "ramdisk")
		fmt.Fprintf(out, "anvil demo: building the deploy ramdisk into %s (Debian's kernel and busybox; cached after the first run)...\n", rd)
		start := time.Now()
		if _, err := ramdisk.Build(ctx, ramdisk.Options{OutputDir: rd}); err != nil {
			return nil, fmt.Errorf("building the deploy ramdisk (or give --ramdisk, the directory `anvil ramdisk build` wrote): %w", err)
		}
		fmt.Fprintf(out, "anvil demo: ramdisk built in %v\n", time.Since(start).Round(time.Second))
	}
	q.kernel, q.ramdisk = filepath.Join(rd, "vmlinuz"), filepath.Join(rd, "initramfs")
	sc.Network.FileAllowedPaths = []string{rd} // the demo's nodes boot these local files
	for _, f := range []string{q.kernel, q.ramdisk} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			return nil, fmt.Errorf("--ramdisk %s: no %s (run `anvil ramdisk build --output %s`)", rd, filepath.Base(f), rd)
		}
	}
	return q, nil
}

// emulatorConfig is the emulator's QEMU configuration: network boot through
// Anvil's boot endpoint, the API and the image reachable from the guests.
func (q *qemuSetup) emulatorConfig(cfg Config, imagePort int) *bmcemu.QEMUConfig {
	bootFile := q.guestAPI + "/boot/boot.ipxe"
	if cfg.VirtualMedia {
		bootFile = ""
	}
	return &bmcemu.QEMUConfig{
		MemoryMiB: cfg.VMMemoryMiB, DiskBytes: DiskBytes,
		BootFile: bootFile, NoNetworkBoot: cfg.VirtualMedia,
		Forwards: []bmcemu.Forward{
			{Guest: fmt.Sprintf("%s:%d", guestAPIHost, q.apiPort), Host: fmt.Sprintf("127.0.0.1:%d", q.apiPort)},
			{Guest: guestImageHost + ":80", Host: fmt.Sprintf("127.0.0.1:%d", imagePort)},
		},
		GuestPort: agentPort,
	}
}

// nodeFields is what a VM's node needs beyond the BMC: network (or virtual
// media) boot of the ramdisk, whose agent the conductor reaches through the
// VM's forwarded port.
func (q *qemuSetup) nodeFields(m *bmcemu.Machine, body map[string]any, virtualMedia bool) {
	di := body["driver_info"].(map[string]any)
	di["deploy_kernel"], di["deploy_ramdisk"] = q.kernel, q.ramdisk
	di["kernel_append_params"] = fmt.Sprintf("console=ttyS0 ipa-advertise-host=127.0.0.1 ipa-advertise-port=%d anvil.min-disk-size=32MiB",
		m.Status().ForwardedPort)
	body["boot_interface"] = "ipxe"
	if virtualMedia {
		body["boot_interface"] = "redfish-virtual-media"
	}
	delete(body, "rescue_interface")
}

// syncWriter serialises writes from the progress reporters.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// watchNodes prints every change of a node's provision or power state
// until ctx ends, from the API's event stream: each transition as it
// happened, none skipped (polling the node list missed short states such
// as inspecting and joined others into impossible transitions).
func watchNodes(ctx context.Context, api string, out io.Writer) {
	ch, err := events.Subscribe(ctx, api, events.Filter{
		Fields: []string{events.FieldProvisionState, events.FieldPowerState}})
	if err != nil {
		fmt.Fprintf(out, "anvil demo: not following the nodes' progress: %v\n", err)
		return
	}
	reportChanges(ch, out, time.Now())
}

// reportChanges prints the provision and power changes of node.updated
// events, with the time since start, until ch closes.
func reportChanges(ch <-chan events.Event, out io.Writer, start time.Time) {
	for e := range ch {
		if e.Type == events.TypeError {
			fmt.Fprintf(out, "anvil demo: stopped following the nodes' progress: %s\n", e.Error)
			continue
		}
		if e.Type != events.TypeUpdated || e.State == nil || e.Previous == nil {
			continue
		}
		old, cur := e.Previous, e.State
		name := e.Name
		if name == "" {
			name = e.Node
		}
		var b strings.Builder
		fmt.Fprintf(&b, "  [%6.1fs] %s:", e.Time.Sub(start).Seconds(), name)
		if old.ProvisionState != cur.ProvisionState {
			fmt.Fprintf(&b, " %s → %s", old.ProvisionState, cur.ProvisionState)
		}
		if old.PowerState != cur.PowerState {
			fmt.Fprintf(&b, " (%s)", cur.PowerState)
		}
		if cur.LastError != "" && old.ProvisionState != cur.ProvisionState {
			fmt.Fprintf(&b, " last_error: %s", cur.LastError)
		}
		fmt.Fprintln(out, b.String())
	}
}

// printQEMU explains QEMU mode after the instructions.
func printQEMU(w io.Writer, info Info) {
	fmt.Fprintf(w, `
The machines are qemu VMs (software emulation, one at a time is kind to a small
host). A VM network-boots with its NIC's stock iPXE from Anvil's boot endpoint
(the guest reaches the API as %s, nothing else), runs the deploy agent from the
ramdisk and, once deployed, boots the image from its disk, which prints
%q on its serial console:
  %s/<node>/console.log
Progress (node states, VM power-ons) follows below.
`, info.GuestAPI, DiskMarker, info.Consoles)
}
