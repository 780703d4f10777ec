// Package demo is `anvil demo`: in one process, a throwaway Anvil (API and
// conductor on SQLite in a temporary directory) and the BMC emulator with a
// fleet of machines, enrolled with the redfish (or ipmi) driver and their
// ports through the HTTP API, plus the commands a newcomer types next. It
// runs until its context ends and removes what it created.
//
// The nodes use deploy_interface "direct": a machine that powers on from the
// network boots the deploy agent (in this process) on its own disk file under
// <dir>/disks, and deploying writes the demo's image, a small raw image served
// on loopback by the demo itself, verified against its sha256.
//
// With Config.QEMU the machines are the emulator's qemu VMs instead: the
// nodes use the ipxe boot interface with the deploy ramdisk `anvil ramdisk
// build` makes (built into <dir>/ramdisk on first use), Anvil's network boot
// endpoint runs on the API listener, and the VMs reach only the API and the
// image server (qemu user networking, restrict=on, guest forwards). The
// image's first sector prints DiskMarker on the VM's serial console when it
// boots from its disk. Node state changes and VM power-ons are printed as
// they happen.
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/hardware"
	"github.com/anvil-metal/anvil/internal/server"
)

// Config is what `anvil demo` takes. Zero values take the defaults noted.
type Config struct {
	Machines  int           // emulated machines (10)
	Listen    string        // API address (127.0.0.1:6385)
	BMCListen string        // Redfish emulator address (127.0.0.1:0: a free port)
	IPMI      bool          // also give every machine an IPMI endpoint
	Latency   time.Duration // added to every BMC call
	// Knobs are every BMC's knobs (Latency, when set, overrides theirs):
	// sessions, rate limits, failures (bmcemu.Knobs).
	Knobs bmcemu.Knobs
	// ImageBytes is the size of the image deployed (ImageBytes, 4 MiB):
	// at 10,000 machines 4 MiB each is 40 GB of disk files.
	ImageBytes int
	// BMCPorts gives every machine's BMC its own Redfish port, so that its
	// session and rate limits hold per machine (bmcemu.Config.BMCPorts).
	BMCPorts bool
	Dir      string    // working directory (database, log, nodes file); "" = a temporary one, removed at the end
	Out      io.Writer // where the instructions go (os.Stdout)
	// Driver is the nodes' hardware type: redfish (default) or ipmi (needs IPMI).
	Driver string
	// QEMU makes every machine a real qemu VM that network-boots the deploy
	// ramdisk through Anvil's boot endpoint (ipxe boot interface) and then
	// boots the deployed image from its disk; progress is printed.
	QEMU bool
	// VirtualMedia (redfish) boots the deploy ramdisk from the BMC's
	// virtual CD (redfish-virtual-media boot interface), as Metal3 does
	// with Redfish BMCs: in QEMU mode an ISO Anvil builds, the VMs having
	// no network boot; else a stand-in deploy_iso the demo serves, for
	// which the emulator starts the agent.
	VirtualMedia bool
	// Ramdisk is the directory `anvil ramdisk build` wrote (vmlinuz,
	// initramfs); "" builds it into the working directory (QEMU mode).
	Ramdisk     string
	VMMemoryMiB int // memory of each VM (QEMU mode; default 512)
	// Ready, if set, is called once everything is enrolled.
	Ready func(Info)
}

// Info describes a running demo.
type Info struct {
	API       string   // http://host:port
	BMC       string   // the emulator's Redfish endpoint
	Dir       string   // working directory
	NodesFile string   // the emulator's enrolment file (holds passwords, 0600)
	LogFile   string   // the server's log
	Nodes     []string // node names, enrolled
	Commands  []string // the walk-through printed, one shell command per entry
	DiskDir   string   // the machines' disk files, <DiskDir>/<node>.img
	// ImageURL and ImageChecksum (sha256) are the demo's image, set as every
	// node's instance_info.
	ImageURL      string
	ImageChecksum string
	// Consoles is where each VM's serial console is written (QEMU mode):
	// <Consoles>/<node>/console.log.
	Consoles string
	GuestAPI string // the API as the VMs reach it (QEMU mode)
	Driver   string // the nodes' hardware type
	// VirtualMedia: the nodes boot the agent from the BMC's virtual CD
	// (redfish-virtual-media), not the network.
	VirtualMedia bool
	// Fleet is the running emulator: its machines and BMC counters (for
	// tests and benchmarks; closed when Run returns).
	Fleet *bmcemu.Emulator
}

// DiskBytes is the size of every machine's disk file (sparse).
const DiskBytes = 64 << 20

// ImageBytes is the size of the demo's image.
const ImageBytes = 4 << 20

// Image is the demo's raw image: a recognisable first sector and ImageBytes
// of deterministic pseudo-random data.
func Image() []byte { return imageOf(ImageBytes) }

// imageOf is the demo's image cut to n bytes (Config.ImageBytes).
func imageOf(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(6385, 1))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	copy(b, "ANVIL DEMO IMAGE\n")
	return b
}

// imageServer serves Image() at /anvil-demo.raw on a free loopback port.
// deployISOStandIn is the deploy ISO of the emulated machines booted by
// virtual media: the BMC emulator starts the agent for a virtual CD that
// holds no ISO 9660 image (bmcemu), so a line stands for the ramdisk.
const deployISOStandIn = "anvil demo: stands for the deploy ramdisk ISO; the BMC emulator runs the agent for it\n"

type imageServer struct {
	url, sum  string
	deployISO string // the deploy ISO stand-in (virtual media without QEMU)
	port      int
	srv       *http.Server
}

func serveImage(log *slog.Logger, img []byte) (*imageServer, error) {
	sum := sha256.Sum256(img)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("image server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /anvil-demo.raw", func(w http.ResponseWriter, r *http.Request) {
		log.Info("serving the image", "remote", r.RemoteAddr)
		http.ServeContent(w, r, "anvil-demo.raw", time.Time{}, bytes.NewReader(img))
	})
	mux.HandleFunc("GET /deploy.iso", func(w http.ResponseWriter, r *http.Request) {
		log.Info("serving the deploy ISO stand-in", "remote", r.RemoteAddr)
		_, _ = w.Write([]byte(deployISOStandIn))
	})
	s := &imageServer{url: "http://" + ln.Addr().String() + "/anvil-demo.raw", sum: hex.EncodeToString(sum[:]),
		deployISO: "http://" + ln.Addr().String() + "/deploy.iso",
		port:      ln.Addr().(*net.TCPAddr).Port,
		srv:       &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *imageServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
}

// Run starts the demo and blocks until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Machines <= 0 {
		cfg.Machines = 10
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:6385"
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Driver == "" {
		cfg.Driver = bmcemu.DriverRedfish
	}
	if cfg.VirtualMedia && cfg.Driver != bmcemu.DriverRedfish {
		return fmt.Errorf("--virtual-media needs the redfish driver")
	}
	if cfg.QEMU {
		cfg.Out = &syncWriter{w: cfg.Out} // progress comes from other goroutines
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "anvil-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	logPath := filepath.Join(dir, "anvil.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	sc := server.Config{
		Listen: cfg.Listen, Database: filepath.Join(dir, "anvil.db"), HostID: "demo-conductor", Log: log,
		Conductor: demoConductor(),
		// The emulated machines boot what their boot device says: the
		// demo's nodes use the fake boot and rescue interfaces, which
		// real hardware types take only when enabled by name.
		Interfaces:      driver.Enablement{Interfaces: hardware.DefaultInterfaces()},
		ShutdownTimeout: 10 * time.Second,
		// Every emulated agent, the operator's CLI and the dashboard come
		// from 127.0.0.1: the per-address cap (meant for one host among
		// many) is the whole listener's here.
		Limits: server.Limits{MaxConnections: demoMaxConnections, MaxConnectionsPerAddress: demoMaxConnections},
		Ready:  func(addr string) { ready <- addr },
	}
	var q *qemuSetup
	if cfg.QEMU {
		if q, err = prepareQEMU(ctx, &cfg, &sc, dir, cfg.Out); err != nil {
			return err
		}
	}
	go func() { served <- server.Serve(sctx, sc) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-served:
		return fmt.Errorf("anvil serve: %w", err)
	case <-ctx.Done():
		stop()
		return <-served
	}
	api := "http://" + addr
	// From here on, a failure stops the server before returning.
	fail := func(err error) error {
		stop()
		<-served
		return err
	}

	image := Image()
	if cfg.ImageBytes > 0 && q == nil {
		image = imageOf(cfg.ImageBytes)
	}
	if q != nil {
		image = QEMUImage()
	}
	img, err := serveImage(log.With("component", "image-server"), image)
	if err != nil {
		return fail(err)
	}
	defer img.close()

	disks := filepath.Join(dir, "disks")
	knobs := cfg.Knobs
	if cfg.Latency != 0 {
		knobs.Latency = cfg.Latency
	}
	ecfg := bmcemu.Config{Count: cfg.Machines, Listen: cfg.BMCListen, IPMI: cfg.IPMI, BMCPorts: cfg.BMCPorts,
		Knobs: knobs, Log: log.With("component", "bmc-emulator"),
		Agent: &bmcemu.AgentConfig{APIURL: api, DiskDir: disks, DiskBytes: DiskBytes, HeartbeatInterval: time.Second}}
	imageURL := img.url
	if q != nil {
		disks = filepath.Join(dir, "machines")
		ecfg.Agent, ecfg.StateDir = nil, disks
		ecfg.QEMU = q.emulatorConfig(cfg, img.port)
		ecfg.OnBoot = func(m *bmcemu.Machine, dev string) {
			fmt.Fprintf(cfg.Out, "  %s: VM powered on, booting from %s (console %s)\n", m.ID, dev, m.Console())
		}
		imageURL = "http://" + guestImageHost + "/anvil-demo.raw" // as the VMs reach it
	}
	emu, err := bmcemu.Start(ctx, ecfg)
	if err != nil {
		return fail(err)
	}
	defer emu.Close()
	nodesPath := filepath.Join(dir, "nodes.json")
	if err := emu.WriteNodesFile(nodesPath, cfg.Driver); err != nil {
		return fail(err)
	}
	info := Info{Fleet: emu, API: api, BMC: emu.URL(), Dir: dir, NodesFile: nodesPath, LogFile: logPath, DiskDir: disks, Driver: cfg.Driver,
		ImageURL: imageURL, ImageChecksum: img.sum}
	nodes, err := emu.Nodes(cfg.Driver)
	if err != nil {
		return fail(err)
	}
	var extra func(name string, body map[string]any)
	switch {
	case q != nil:
		info.Consoles, info.GuestAPI = disks, q.guestAPI
		extra = func(name string, body map[string]any) { q.nodeFields(emu.Machine(name), body, cfg.VirtualMedia) }
	case cfg.VirtualMedia:
		// Metal3's way with a Redfish BMC: the BMC inserts the deploy ISO
		// and the machine boots its virtual CD, where the emulator starts
		// the agent.
		info.VirtualMedia = true
		extra = func(_ string, body map[string]any) {
			body["boot_interface"] = "redfish-virtual-media"
			body["driver_info"].(map[string]any)["deploy_iso"] = img.deployISO
		}
	}
	if err := enroll(ctx, api, nodes, info, extra); err != nil {
		return fail(err)
	}
	for _, n := range nodes.Nodes {
		info.Nodes = append(info.Nodes, n.Name)
	}
	info.Commands = walkthrough(info, info.Nodes[0])
	printInstructions(cfg.Out, info)
	if q != nil {
		printQEMU(cfg.Out, info)
		wctx, wstop := context.WithCancel(ctx)
		defer wstop()
		go watchNodes(wctx, api, cfg.Out)
	}
	if cfg.Ready != nil {
		cfg.Ready(info)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("anvil serve stopped: %w", err)
	}
	fmt.Fprintln(cfg.Out, "\nanvil demo: stopping")
	stop()
	return <-served
}

// demoMaxConnections is the demo API's connection cap (server.Limits).
const demoMaxConnections = 8192

// demoConductor is the conductor's configuration: Ironic's defaults, with
// 200 workers, room for a whole fleet cleaning or deploying at once, and
// power sync every 30 s so out-of-band changes show quickly.

func demoConductor() conductor.Config {
	return conductor.Config{
		// A fleet of emulated machines is cleaned and deployed all at
		// once: Ironic's caps (50 cleans, 250 deploys) would queue it.
		MaxConcurrentClean: 1000, MaxConcurrentDeploy: 1000,
		Workers: 200, LockRetries: 3, LockRetryInterval: time.Second, AutomatedClean: true,
		DeployCallbackTimeout: 30 * time.Minute, CleanCallbackTimeout: 30 * time.Minute,
		InspectWaitTimeout: 30 * time.Minute, RescueCallbackTimeout: 30 * time.Minute,
		ServiceCallbackTimeout: 30 * time.Minute, CheckProvisionStateInterval: time.Minute,
		SyncPowerStateInterval: 30 * time.Second, ForcePowerStateDuringSync: true,
		PowerStateSyncMaxRetries: 3, SyncPowerStateWorkers: 8, ConductorDeadAfter: time.Minute,
	}
}

// walkthrough is the list of commands printed for the newcomer (and run by
// the demo's test, in order).
func walkthrough(info Info, node string) []string {
	if info.Consoles != "" { // VMs: each boot takes tens of seconds
		return []string{
			fmt.Sprintf("export OS_ENDPOINT=%s OS_AUTH_TYPE=none", info.API),
			"baremetal node list",
			fmt.Sprintf("baremetal node manage %s --wait 60", node),
			fmt.Sprintf("baremetal node inspect %s --wait 60", node),
			fmt.Sprintf("baremetal node provide %s --wait 600", node),
			fmt.Sprintf("baremetal node deploy %s --wait 600", node),
			fmt.Sprintf("grep -a '%s' %s/%s/console.log", DiskMarker, info.Consoles, node),
			fmt.Sprintf("baremetal node undeploy %s --wait 600", node),
		}
	}
	return []string{
		fmt.Sprintf("export OS_ENDPOINT=%s OS_AUTH_TYPE=none", info.API),
		"baremetal node list",
		fmt.Sprintf("baremetal node manage %s --wait 60", node),
		fmt.Sprintf("baremetal node inspect %s --wait 60", node),
		fmt.Sprintf("baremetal node show %s -f json -c properties", node),
		fmt.Sprintf("baremetal node provide %s --wait 120", node),
		fmt.Sprintf("baremetal node set %s --instance-info image_source=%s --instance-info image_checksum=%s",
			node, info.ImageURL, info.ImageChecksum),
		fmt.Sprintf("baremetal node deploy %s --wait 120", node),
		fmt.Sprintf("baremetal node power off %s", node),
		fmt.Sprintf("curl -s %s/emulator/machines/%s", info.BMC, node),
	}
}

func printInstructions(w io.Writer, info Info) {
	fmt.Fprintf(w, `anvil demo: %d emulated machines enrolled with the %s driver
  API            %s
  BMC emulator   %s/redfish/v1 (knobs: %s/emulator/machines)
  server log     %s
  nodes file     %s

Walk a machine through its life (python3-ironicclient's baremetal CLI;
'anvil node ...' takes the same arguments):

`, len(info.Nodes), info.Driver, info.API, info.BMC, info.BMC, info.LogFile, info.NodesFile)
	for _, c := range info.Commands {
		fmt.Fprintf(w, "  %s\n", c)
	}
	from := "from the network"
	if info.VirtualMedia {
		from = "from the deploy ISO its BMC inserts in its virtual CD"
	}
	fmt.Fprintf(w, `
Deploying uses deploy_interface "direct": the machine boots the deploy agent
%s, which writes the image (%s, sha256 %s)
to the machine's disk file in %s, then boots it from disk
('"running": "image"' on the emulator's machine). Make a BMC misbehave with
  curl -s -X PATCH %s/emulator/machines/%s -d '{"reject_auth": true}'
(or "dead", "latency": "500ms", "failure_rate": 0.2) and watch power sync.
Ctrl-C stops the demo and removes its files.
`, from, info.ImageURL, info.ImageChecksum, info.DiskDir, info.BMC, info.Nodes[len(info.Nodes)-1])
}

// NodeBody is the POST /v1/nodes body of an emulated machine: its BMC,
// deploy_interface direct (the emulator runs the agent when it boots from
// the network), fake boot and rescue, and the image to deploy. Its ports
// are created after it (PortEntry).
func NodeBody(n bmcemu.NodeEntry, imageURL, imageChecksum string) map[string]any {
	return map[string]any{"name": n.Name, "driver": n.Driver, "driver_info": n.DriverInfo,
		"deploy_interface": "direct", "boot_interface": "fake", "rescue_interface": "fake", "extra": n.Extra,
		"instance_info": map[string]any{"image_source": imageURL, "image_checksum": imageChecksum}}
}

// enroll creates every node and its ports through the HTTP API.
// with deploy_interface direct and the demo's image as instance_info; extra,
// if set, completes each node's body.
func enroll(ctx context.Context, api string, nodes bmcemu.NodesFile, info Info, extra func(name string, body map[string]any)) error {
	for _, n := range nodes.Nodes {
		var created struct {
			UUID string `json:"uuid"`
		}
		body := NodeBody(n, info.ImageURL, info.ImageChecksum)
		if extra != nil {
			extra(n.Name, body)
		}
		if err := call(ctx, http.MethodPost, api+"/v1/nodes", body, &created); err != nil {
			return fmt.Errorf("enrolling %s: %w", n.Name, err)
		}
		for _, p := range n.Ports {
			body := map[string]any{"address": p.Address, "node_uuid": created.UUID, "pxe_enabled": p.PXEEnabled}
			if err := call(ctx, http.MethodPost, api+"/v1/ports", body, nil); err != nil {
				return fmt.Errorf("enrolling port %s of %s: %w", p.Address, n.Name, err)
			}
		}
	}
	return nil
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends a JSON request to the Anvil API (latest microversion).
func call(ctx context.Context, method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.StatusCode, apiError(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// apiError extracts Ironic's faultstring from an error body.
func apiError(b []byte) string {
	var outer struct {
		ErrorMessage string `json:"error_message"`
	}
	if json.Unmarshal(b, &outer) == nil && outer.ErrorMessage != "" {
		var inner struct {
			Faultstring string `json:"faultstring"`
		}
		if json.Unmarshal([]byte(outer.ErrorMessage), &inner) == nil && inner.Faultstring != "" {
			return inner.Faultstring
		}
		return outer.ErrorMessage
	}
	return strings.TrimSpace(string(b))
}
