package bmcemu

import (
	"crypto/subtle"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Knobs make a BMC misbehave. The zero value is a healthy, instant BMC.
type Knobs struct {
	// Latency is added to every call the BMC answers.
	Latency time.Duration `json:"latency"`
	// FailureRate is the fraction (0..1) of calls answered with a transient
	// error: HTTP 503 on Redfish, a dropped reply on IPMI.
	FailureRate float64 `json:"failure_rate"`
	// LatencyJitter adds a uniformly drawn share of itself to Latency:
	// Latency 1s with LatencyJitter 2s is a BMC answering in 1 to 3 s.
	LatencyJitter time.Duration `json:"latency_jitter,omitempty"`
	// MaxSessions is how many Redfish sessions the BMC holds at once (0: no
	// limit); one more login is refused with HTTP 400 and iDRAC's RAC0218.
	MaxSessions int `json:"max_sessions,omitempty"`
	// SessionTimeout ends a session idle this long (0: never); its token
	// is then answered 401, as BMCs expire sessions.
	SessionTimeout time.Duration `json:"session_timeout,omitempty"`
	// RateLimit is how many calls a second the BMC answers (bursts of as
	// many, 0: no limit); the others get 503 with Retry-After at once.
	RateLimit float64 `json:"rate_limit,omitempty"`
	// Dead makes the BMC stop answering: Redfish connections are closed
	// without a reply, IPMI packets are dropped.
	Dead bool `json:"dead"`
	// RejectAuth makes the BMC refuse every credential, as if its password
	// had been changed behind the operator's back.
	RejectAuth bool `json:"reject_auth"`
	// FailInsertMedia makes the VirtualMedia InsertMedia action (and PATCH
	// Image) answer HTTP 500, as a BMC whose media service is broken.
	FailInsertMedia bool `json:"fail_insert_media"`
	// Health is the system's Status.Health (OK, Warning, Critical); "" is OK.
	Health string `json:"health,omitempty"`
	// RAIDOnReset makes the RAID controller apply volume changes only at the
	// next reset, as many real controllers do: its Volumes collection offers
	// OperationApplyTime OnReset alone, and a volume create or delete
	// answers 202 with a task monitor and happens when the machine next
	// boots.
	RAIDOnReset bool `json:"raid_on_reset,omitempty"`
}

// Boot devices as Redfish names them (BootSourceOverrideTarget).
const (
	BootNone = "None"
	BootPxe  = "Pxe"
	BootHdd  = "Hdd"
	BootCd   = "Cd"
	BootBios = "BiosSetup"
	// BootUefiHttp is UEFI HTTP boot of Boot.HttpBootUri (httpboot.go).
	BootUefiHttp = "UefiHttp"
)

// Boot override modes (BootSourceOverrideEnabled) and boot modes.
const (
	OverrideDisabled   = "Disabled"
	OverrideOnce       = "Once"
	OverrideContinuous = "Continuous"
	ModeUEFI           = "UEFI"
	ModeLegacy         = "Legacy"
)

// Hardware is what inspection finds in a machine.
type Hardware struct {
	Sockets        int     // processors
	CoresPerSocket int     // cores per processor
	ThreadsPerCore int     // threads per core
	Arch           string  // Redfish ProcessorArchitecture: x86, ARM, ...
	DIMMs          int     // memory modules
	DIMMMiB        int     // size of one module
	DisksBytes     []int64 // SimpleStorage devices
	MACs           []string
}

// Machine is one emulated server and its BMC.
type Machine struct {
	ID       string // Redfish system id and node name
	UUID     string
	Username string
	HW       Hardware

	password string
	onBoot   func(m *Machine, device string)
	emu      *Emulator
	disk     string // file-backed disk (Config.Agent)

	// agentMu serialises starting and stopping the machine's agent.
	agentMu   sync.Mutex
	lastAgent *agentRun // the latest agent started, under agentMu

	// mediaMu serialises virtual media inserts and ejects (a download runs
	// outside mu).
	mediaMu sync.Mutex

	bios    biosState     // BIOS attributes, pending settings
	fw      firmwareState // firmware versions
	storage storageState  // RAID volumes (storage.go)

	mu          sync.Mutex
	media       media
	vm          *qemuVM // the running VM (Config.QEMU)
	power       bool
	bootTarget  string
	bootEnabled string
	bootMode    string
	httpBootURI string // Boot.HttpBootUri (httpboot.go)
	knobs       Knobs
	calls       int64
	boots       int64
	nmis        int64 // NMIs injected (ComputerSystem.Reset Nmi)
	ipmiPort    int
	ipmi        *ipmiBMC
	running     string    // what the machine runs: Running*, "" when off
	agent       *agentRun // the agent booted from the network, if any
	agentAddr   string    // its command API
	fwdPort     int       // loopback port forwarded to the VM's QEMUConfig.GuestPort

	bmc   *endpoint    // its BMC's sessions and limits when on its own port (limits.go)
	bmcLn net.Listener // its own Redfish port (Config.BMCPorts)
}

// Status is a snapshot of a machine, as the control endpoint shows it.
type Status struct {
	ID          string   `json:"id"`
	UUID        string   `json:"uuid"`
	Power       string   `json:"power_state"` // On or Off
	BootTarget  string   `json:"boot_source_override_target"`
	BootEnabled string   `json:"boot_source_override_enabled"`
	BootMode    string   `json:"boot_source_override_mode"`
	HTTPBootURI string   `json:"http_boot_uri,omitempty"`
	Knobs       Knobs    `json:"knobs"`
	Calls       int64    `json:"calls"`
	Boots       int64    `json:"boots"`
	MACs        []string `json:"macs"`
	IPMIPort    int      `json:"ipmi_port,omitempty"`
	// Running is what the machine runs since it last booted: "agent" (network
	// boot with Config.Agent), "image" (booted a disk holding an image),
	// "no-os" (an empty disk), "firmware"; empty when off.
	Running  string `json:"running,omitempty"`
	AgentURL string `json:"agent_url,omitempty"` // the running agent's command API
	Disk     string `json:"disk,omitempty"`      // the machine's disk file (Config.Agent or QEMU)
	// Console is the VM's serial console file and ForwardedPort the
	// 127.0.0.1 port reaching QEMUConfig.GuestPort in the VM (QEMU mode).
	Console       string `json:"console,omitempty"`
	ForwardedPort int    `json:"forwarded_port,omitempty"`
	VMPid         int    `json:"vm_pid,omitempty"` // the running qemu's process id
	Media         Media  `json:"virtual_media"`
	NMIs          int64  `json:"nmis"` // NMIs injected so far
	// RedfishURL and BMC are the machine's own Redfish port and its
	// counters (Config.BMCPorts).
	RedfishURL string        `json:"redfish_url,omitempty"`
	BMC        *SessionStats `json:"bmc,omitempty"`
}

// Status returns a snapshot of the machine.
func (m *Machine) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := "Off"
	if m.power {
		p = "On"
	}
	pid := 0
	if m.vm != nil {
		pid = m.vm.cmd.Process.Pid
	}
	return Status{VMPid: pid, ID: m.ID, UUID: m.UUID, Power: p, BootTarget: m.bootTarget, BootEnabled: m.bootEnabled,
		BootMode: m.bootMode, HTTPBootURI: m.httpBootURI, Knobs: m.knobs, Calls: m.calls, Boots: m.boots,
		MACs: append([]string(nil), m.HW.MACs...), IPMIPort: m.ipmiPort,
		Running: m.running, AgentURL: m.agentAddr, Disk: m.disk, Console: m.Console(), ForwardedPort: m.fwdPort,
		Media: Media{Image: m.media.image, Inserted: m.media.inserted, WriteProtected: m.media.writeProtected, File: m.media.file},
		NMIs:  m.nmis, RedfishURL: m.redfishURL(), BMC: m.bmcStats()}
}

func (m *Machine) redfishURL() string {
	if m.bmcLn == nil {
		return ""
	}
	return "http://" + m.bmcLn.Addr().String()
}

func (m *Machine) bmcStats() *SessionStats {
	if m.bmcLn == nil {
		return nil
	}
	s := m.bmc.Stats()
	return &s
}

// Password is the BMC password (for writing the nodes file; never logged).
func (m *Machine) Password() string { return m.password }

// Knobs returns the machine's current knobs.
func (m *Machine) Knobs() Knobs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.knobs
}

// SetKnobs replaces the machine's knobs.
func (m *Machine) SetKnobs(k Knobs) {
	m.mu.Lock()
	m.knobs = k
	b := m.ipmi
	m.mu.Unlock()
	if b != nil {
		b.applyAuth(k.RejectAuth)
	}
}

// PoweredOn reports the power state.
func (m *Machine) PoweredOn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.power
}

// SetPower changes the power state behind the BMC's back (tests: the
// machine was switched by hand).
func (m *Machine) SetPower(on bool) error { return m.applyPower(on, false) }

// checkAuth reports whether user/password open this BMC.
func (m *Machine) checkAuth(user, password string) bool {
	m.mu.Lock()
	reject := m.knobs.RejectAuth
	m.mu.Unlock()
	if reject {
		return false
	}
	u := subtle.ConstantTimeCompare([]byte(user), []byte(m.Username))
	p := subtle.ConstantTimeCompare([]byte(password), []byte(m.password))
	return u&p == 1
}

// call counts a BMC call and returns the knobs to apply to it.
// nmi records a non-maskable interrupt.
func (m *Machine) nmi() {
	m.mu.Lock()
	m.nmis++
	m.mu.Unlock()
}

func (m *Machine) call() Knobs {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return m.knobs
}

// applyPower sets power; reset reboots a machine that is on. A transition to
// on (or a reset) boots: the Once override is consumed and OnBoot is called.
// In QEMU mode it starts or stops the VM; an error means the VM did not start
// (the machine stays off).
func (m *Machine) applyPower(on, reset bool) error {
	m.mu.Lock()
	boots := on && (!m.power || reset)
	offs := !on && m.power
	m.power = on
	var dev string
	if boots {
		m.boots++
		dev = m.bootDeviceLocked()
		if m.bootEnabled == OverrideOnce {
			m.bootEnabled, m.bootTarget = OverrideDisabled, BootNone
		}
	}
	hook := m.onBoot
	m.mu.Unlock()
	if boots {
		m.applyPendingBIOS() // pending BIOS settings take effect at boot
		m.applyPendingVolumes()
	}
	if (boots || offs) && m.emu != nil && m.emu.cfg.QEMU != nil {
		if err := (vmFleet{m.emu}).vmPowered(m, boots, dev); err != nil {
			return err
		}
	} else if (boots || offs) && m.emu != nil {
		(agentFleet{m.emu}).powered(m, boots, dev)
	}
	if boots && hook != nil {
		hook(m, dev)
	}
	return nil
}

// shutdown is a graceful power-off: in QEMU mode the VM's ACPI power button
// (the machine is off once the guest has shut down, or been killed after
// QEMUConfig.ShutdownTimeout); otherwise at once.
func (m *Machine) shutdown() error {
	if m.emu != nil && m.emu.cfg.QEMU != nil {
		(vmFleet{m.emu}).shutdownVM(m)
		return nil
	}
	return m.applyPower(false, false)
}

// bootDeviceLocked is the device the machine boots from now, in Ironic's
// words: pxe, disk, cdrom, bios.
func (m *Machine) bootDeviceLocked() string {
	if m.bootEnabled == OverrideDisabled {
		return "disk"
	}
	switch m.bootTarget {
	case BootPxe:
		return "pxe"
	case BootCd:
		return "cdrom"
	case BootBios:
		return "bios"
	case BootUefiHttp:
		return httpBootDevice
	}
	return "disk"
}

// setBoot applies a boot override; empty fields are left as they are.
func (m *Machine) setBoot(target, enabled, mode string) error {
	switch target {
	case "", BootNone, BootPxe, BootHdd, BootCd, BootBios, BootUefiHttp:
	default:
		return fmt.Errorf("BootSourceOverrideTarget %q is not supported", target)
	}
	switch enabled {
	case "", OverrideDisabled, OverrideOnce, OverrideContinuous:
	default:
		return fmt.Errorf("BootSourceOverrideEnabled %q is not supported", enabled)
	}
	switch mode {
	case "", ModeUEFI, ModeLegacy:
	default:
		return fmt.Errorf("BootSourceOverrideMode %q is not supported", mode)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if target != "" {
		m.bootTarget = target
		if enabled == "" && target != BootNone && m.bootEnabled == OverrideDisabled {
			m.bootEnabled = OverrideOnce
		}
	}
	if enabled != "" {
		m.bootEnabled = enabled
	}
	if mode != "" {
		m.bootMode = mode
	}
	return nil
}

// boot returns target, enabled and mode.
func (m *Machine) boot() (string, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bootTarget, m.bootEnabled, m.bootMode
}

// defaultHardware is a modest 1U server: 2×4 cores ×2 threads, 4×8 GiB,
// one 100 GiB disk, two NICs.
func defaultHardware(macs []string) Hardware {
	return Hardware{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2, Arch: "x86",
		DIMMs: 4, DIMMMiB: 8192, DisksBytes: []int64{100 << 30}, MACs: macs}
}

// macFor derives a stable, locally administered MAC for NIC nic of machine i.
func macFor(seed uint64, i, nic int) string {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	return fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", r.IntN(256), (i>>8)&0xff, i&0xff, nic)
}

// uuidFor derives a stable UUID for machine i.
func uuidFor(seed uint64, i int) string {
	r := rand.New(rand.NewPCG(seed, uint64(i)+1<<32))
	var b [16]byte
	for j := range b {
		b[j] = byte(r.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
