package bmcemu

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Config describes the fleet to emulate. Zero values take the defaults noted.
type Config struct {
	Count      int    // machines (default 1)
	NamePrefix string // machine ids are <prefix><nn> (default "node-")
	Listen     string // Redfish HTTP address (default 127.0.0.1:0, a free port)
	// BMCPorts gives every machine's BMC a Redfish port of its own on
	// Listen's host (consecutive from BMCBasePort; 0: a free port each), so
	// that sessions, rate limits and counters are per machine as on real
	// BMCs; the shared address keeps serving every machine.
	BMCPorts    bool
	BMCBasePort int
	// IPMI starts an IPMI lanplus endpoint per machine on IPMIHost, on
	// consecutive ports from IPMIBasePort (0: a free port each).
	IPMI         bool
	IPMIHost     string // default 127.0.0.1
	IPMIBasePort int
	Username     string // default "admin"
	Password     string // default: random, the same for every machine
	Seed         uint64 // MACs, UUIDs and failure draws (default 1)
	Knobs        Knobs  // initial knobs of every machine
	// Hardware overrides the default hardware of every machine (MACs are
	// still generated when it has none).
	Hardware *Hardware
	// OnBoot is called (outside any lock) whenever a machine powers on or is
	// reset, with the device it boots: pxe, disk, cdrom or bios. It is the
	// hook where a later step starts an emulated agent on network boot.
	OnBoot func(m *Machine, device string)
	// Agent, if set, boots the deploy agent on every network boot (see
	// AgentConfig); Start fills in its defaults.
	Agent *AgentConfig
	// QEMU, if set, makes every machine a real qemu VM (see QEMUConfig).
	QEMU *QEMUConfig
	// StateDir holds each machine's files under <StateDir>/<id>/: virtual
	// media downloaded by InsertMedia, and with QEMU its disk, serial console
	// and qemu's log (default: a temporary directory, removed by Close).
	StateDir string
	Log      *slog.Logger
}

// Emulator is a running fleet: its machines, their shared state and what
// tests and operators call. The parts that serve or run the machines are
// types of their own over it: redfishAPI (the Redfish tree, redfish.go),
// controlAPI (/emulator/, control.go), bmcPorts (each machine's own
// Redfish port, limits.go), ipmiFleet (ipmi.go), vmFleet (qemu VMs,
// qemu.go) and agentFleet (the deploy agent on network boot, agent.go).
type Emulator struct {
	cfg      Config
	machines []*Machine
	byID     map[string]*Machine
	srv      *http.Server
	ln       net.Listener
	shared   *endpoint  // the BMC of the shared address (limits.go)
	events   eventStore // the EventService's subscriptions (events.go)
	log      *slog.Logger

	randMu sync.Mutex
	rnd    *rand.Rand

	mu       sync.Mutex
	defaults Knobs // knobs of calls that name no machine (service root, sessions)
	ipmis    []*ipmiBMC
	done     chan struct{}
	closed   bool

	agents     sync.WaitGroup // running agents
	tmpDiskDir string         // removed by Close

	stateDir    string
	tmpStateDir string       // removed by Close
	mediaClient *http.Client // downloads virtual media and firmware images
	updates     updateService
	vms         sync.WaitGroup
	bmcServing  sync.WaitGroup // Serve loops of the machines' own ports
}

// Start builds the fleet and serves it until Close.
func Start(ctx context.Context, cfg Config) (*Emulator, error) {
	if cfg.Count <= 0 {
		cfg.Count = 1
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = "node-"
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.IPMIHost == "" {
		cfg.IPMIHost = "127.0.0.1"
	}
	if cfg.Username == "" {
		cfg.Username = "admin"
	}
	if cfg.Password == "" {
		cfg.Password = randomPassword()
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	e := &Emulator{cfg: cfg, byID: map[string]*Machine{}, shared: newEndpoint(nil),
		log: cfg.Log, rnd: rand.New(rand.NewPCG(cfg.Seed, 7)), defaults: cfg.Knobs, done: make(chan struct{}),
		mediaClient: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	if err := e.setupStateDir(); err != nil {
		return nil, err
	}
	if cfg.QEMU != nil {
		q := *cfg.QEMU
		e.cfg.QEMU = &q
		if err := (vmFleet{e}).setupQEMU(); err != nil {
			e.removeStateDir()
			return nil, err
		}
	}
	width := len(fmt.Sprint(cfg.Count))
	if width < 2 {
		width = 2
	}
	for i := 1; i <= cfg.Count; i++ {
		m := &Machine{
			ID: fmt.Sprintf("%s%0*d", cfg.NamePrefix, width, i), UUID: uuidFor(cfg.Seed, i),
			Username: cfg.Username, password: cfg.Password, onBoot: cfg.OnBoot, emu: e,
			bootTarget: BootNone, bootEnabled: OverrideDisabled, bootMode: ModeUEFI, knobs: cfg.Knobs,
		}
		m.bmc = newEndpoint(m)
		if e.cfg.QEMU != nil && e.cfg.QEMU.UEFIFirmware == "" {
			m.bootMode = ModeLegacy // SeaBIOS only
		}
		if cfg.Hardware != nil {
			m.HW = *cfg.Hardware
			m.HW.DisksBytes = append([]int64(nil), cfg.Hardware.DisksBytes...)
			m.HW.MACs = append([]string(nil), cfg.Hardware.MACs...)
		} else if e.cfg.QEMU != nil {
			m.HW = e.cfg.QEMU.hardware()
		} else {
			m.HW = defaultHardware(nil)
		}
		if len(m.HW.MACs) == 0 {
			m.HW.MACs = []string{macFor(cfg.Seed, i, 0), macFor(cfg.Seed, i, 1)}
			if e.cfg.QEMU != nil {
				m.HW.MACs = m.HW.MACs[:1] // a VM has one NIC
			}
		}
		e.machines = append(e.machines, m)
		e.byID[m.ID] = m
	}
	if e.cfg.QEMU != nil {
		if err := (vmFleet{e}).setupVMs(); err != nil {
			e.removeStateDir()
			return nil, err
		}
	}
	if cfg.Agent != nil {
		ac := *cfg.Agent // Start fills in defaults on its own copy
		e.cfg.Agent = &ac
		if err := (agentFleet{e}).setupAgents(); err != nil {
			(agentFleet{e}).stopAgents()
			e.removeStateDir()
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		(agentFleet{e}).stopAgents()
		e.removeStateDir()
		return nil, fmt.Errorf("bmc emulator: listen %s: %w", cfg.Listen, err)
	}
	e.ln = ln
	if cfg.BMCPorts {
		if err := (bmcPorts{e}).startBMCPorts(ctx); err != nil {
			ln.Close()
			(agentFleet{e}).stopAgents()
			e.removeStateDir()
			return nil, err
		}
	}
	if cfg.IPMI {
		if err := (ipmiFleet{e}).startIPMI(ctx); err != nil {
			ln.Close()
			(bmcPorts{e}).closeBMCPorts()
			(ipmiFleet{e}).stopIPMI()
			(agentFleet{e}).stopAgents()
			e.removeStateDir()
			return nil, err
		}
	}
	e.srv = &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second, ConnContext: connContext}
	(bmcPorts{e}).serveBMCPorts(e.srv)
	go func() {
		defer close(e.done)
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("bmc emulator stopped", "err", err)
		}
	}()
	e.log.Info("bmc emulator serving", "redfish", e.URL(), "machines", len(e.machines), "ipmi", cfg.IPMI)
	return e, nil
}

// URL is the Redfish endpoint, e.g. http://127.0.0.1:8000.
func (e *Emulator) URL() string { return "http://" + e.ln.Addr().String() }

// Machines lists the machines in id order.
func (e *Emulator) Machines() []*Machine { return append([]*Machine(nil), e.machines...) }

// Machine returns the machine with id, or nil.
func (e *Emulator) Machine(id string) *Machine { return e.byID[id] }

// SetKnobs changes the knobs of machine id, or of every machine (and of calls
// naming none) when id is empty. It reports false for an unknown id.
func (e *Emulator) SetKnobs(id string, change func(*Knobs)) bool {
	if id == "" {
		e.mu.Lock()
		change(&e.defaults)
		e.mu.Unlock()
		for _, m := range e.machines {
			k := m.Knobs()
			change(&k)
			m.SetKnobs(k)
		}
		return true
	}
	m := e.byID[id]
	if m == nil {
		return false
	}
	k := m.Knobs()
	change(&k)
	m.SetKnobs(k)
	return true
}

func (e *Emulator) defaultKnobs() Knobs {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.defaults
}

// fails draws whether a call with failure rate p fails.
func (e *Emulator) fails(p float64) bool {
	if p <= 0 {
		return false
	}
	e.randMu.Lock()
	defer e.randMu.Unlock()
	return e.rnd.Float64() < p
}

// Close stops the HTTP server, every IPMI endpoint and every agent (and
// removes the disk files when they are in a temporary directory).
func (e *Emulator) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.srv.Shutdown(ctx)
	if err != nil {
		err = e.srv.Close()
	}
	<-e.done
	e.bmcServing.Wait()
	e.updates.wg.Wait()
	(ipmiFleet{e}).stopIPMI()
	(agentFleet{e}).stopAgents()
	(vmFleet{e}).stopVMs()
	e.removeStateDir()
	return err
}

// setupStateDir creates the state directory (a temporary one by default).
func (e *Emulator) setupStateDir() error {
	if e.cfg.StateDir == "" {
		d, err := os.MkdirTemp("", "anvil-bmcemu-")
		if err != nil {
			return fmt.Errorf("bmc emulator: state directory: %w", err)
		}
		e.stateDir, e.tmpStateDir = d, d
		return nil
	}
	if err := os.MkdirAll(e.cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("bmc emulator: state directory: %w", err)
	}
	e.stateDir = e.cfg.StateDir
	return nil
}

func (e *Emulator) removeStateDir() {
	if e.tmpStateDir != "" {
		_ = os.RemoveAll(e.tmpStateDir)
	}
}

// StateDir is the directory holding the machines' files.
func (e *Emulator) StateDir() string { return e.stateDir }

// randomPassword is 15 characters: within IPMI's 16-byte password limit.
func randomPassword() string {
	var b [6]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "anvil-emulator"
	}
	return "pw-" + hex.EncodeToString(b[:])
}

// splitPath splits a URL path into its non-empty segments.
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
