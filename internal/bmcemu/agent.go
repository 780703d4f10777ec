package bmcemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/anvil-metal/anvil/internal/agent"
)

// What a machine is running, as Status.Running reports it.
const (
	RunningAgent    = "agent"    // booted from the network: the deploy agent (the "ramdisk")
	RunningImage    = "image"    // booted from a disk that holds an image
	RunningNoImage  = "no-os"    // booted from an empty (zeroed) disk
	RunningFirmware = "firmware" // booted to an empty cdrom or BIOS setup: nothing of ours runs
	RunningLiveISO  = "live-iso" // booted a virtual CD holding an OS of its own (a ramdisk deploy's live ISO)
)

// AgentConfig makes network boots "boot the ramdisk": when a machine powers
// on (or resets) with boot device pxe, or cdrom with virtual media inserted
// (the ISO is taken to be the ramdisk), the deploy agent is started for it
// with its own file-backed disk and the MACs of its NICs, so Anvil's direct
// deploy runs unchanged. Powering off, or booting any other device, stops it.
type AgentConfig struct {
	// APIURL is the Anvil API the agents look their node up on (required).
	APIURL string
	// DiskDir holds one disk file per machine, <DiskDir>/<id>.img (default:
	// a temporary directory, removed by Close).
	DiskDir string
	// DiskBytes is the size of each disk file, created sparse when missing
	// (default 64 MiB).
	DiskBytes int64
	// HeartbeatInterval is the agents' fixed heartbeat interval (default 1 s).
	HeartbeatInterval time.Duration
	// Run runs one agent until ctx ends (default RunAgentInProcess).
	Run func(ctx context.Context, spec AgentSpec) error
}

// AgentSpec is what one booted agent is given.
type AgentSpec struct {
	Machine           string // machine id
	APIURL            string
	MACs              []string
	Disk              string // the machine's disk file
	HeartbeatInterval time.Duration
	Log               *slog.Logger
	// Ready must be called with the agent's command API address once it
	// listens (it shows in the machine's status).
	Ready func(addr string)
}

// RunAgentInProcess runs internal/agent in this process, its command API on
// a free loopback port. The machine's disk file is the only disk root
// device hints choose among (as --disk makes it for a child agent): a hint
// never picks a disk of the host the emulator runs on.
func RunAgentInProcess(ctx context.Context, spec AgentSpec) error {
	// BIOS: the agent runs on the emulator's host, whose UEFI boot
	// entries (if it has any) it must never touch.
	a, err := agent.New(agent.Config{APIURL: spec.APIURL, MACs: spec.MACs, Disk: spec.Disk, Disks: []string{spec.Disk},
		Listen: "127.0.0.1:0", HeartbeatInterval: spec.HeartbeatInterval, Log: spec.Log, Ready: spec.Ready, BIOS: true})
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// RunAgentProcess returns a Run that starts `bin agent ...` as a child (bin is
// the anvil binary, e.g. os.Executable()), stopped with SIGTERM when ctx ends.
func RunAgentProcess(bin string) func(ctx context.Context, spec AgentSpec) error {
	return func(ctx context.Context, spec AgentSpec) error {
		args := []string{"agent", "--api-url", spec.APIURL, "--disk", spec.Disk, "--listen", "127.0.0.1:0", "--bios",
			"--heartbeat-interval", spec.HeartbeatInterval.String()}
		for _, mac := range spec.MACs {
			args = append(args, "--mac", mac)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		out := &agentOutput{log: spec.Log, ready: spec.Ready}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

// agentOutput logs a child agent's lines and spots its address.
type agentOutput struct {
	mu    sync.Mutex
	buf   []byte
	log   *slog.Logger
	ready func(string)
}

func (o *agentOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	for {
		i := bytes.IndexByte(o.buf, '\n')
		if i < 0 {
			break
		}
		line := string(o.buf[:i])
		o.buf = o.buf[i+1:]
		var addr string
		if _, err := fmt.Sscanf(line, "anvil agent: command API on http://%s", &addr); err == nil && o.ready != nil {
			o.ready(addr)
		}
		o.log.Debug("agent output", "line", line)
	}
	return len(p), nil
}

// agentFleet boots the deploy agent of machines that network-boot
// (Config.Agent) and stops it when they power off or boot elsewhere.
type agentFleet struct{ e *Emulator }

// agentRun is one running agent of a machine.
type agentRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// setupAgents fills AgentConfig's defaults and creates the disk files.
func (a agentFleet) setupAgents() error {
	e := a.e
	ac := e.cfg.Agent
	if ac == nil {
		return nil
	}
	if ac.APIURL == "" {
		return errors.New("bmc emulator: Agent.APIURL is required")
	}
	if ac.DiskBytes <= 0 {
		ac.DiskBytes = 64 << 20
	}
	if ac.HeartbeatInterval <= 0 {
		ac.HeartbeatInterval = time.Second
	}
	if ac.Run == nil {
		ac.Run = RunAgentInProcess
	}
	if ac.DiskDir == "" {
		d, err := os.MkdirTemp("", "anvil-bmcemu-disks-")
		if err != nil {
			return err
		}
		ac.DiskDir, e.tmpDiskDir = d, d
	} else if err := os.MkdirAll(ac.DiskDir, 0o700); err != nil {
		return err
	}
	for _, m := range e.machines {
		m.disk = filepath.Join(ac.DiskDir, m.ID+".img")
		f, err := os.OpenFile(m.disk, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return fmt.Errorf("bmc emulator: disk of %s: %w", m.ID, err)
		}
		fi, err := f.Stat()
		if err == nil && fi.Size() < ac.DiskBytes {
			err = f.Truncate(ac.DiskBytes)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("bmc emulator: disk of %s: %w", m.ID, err)
		}
	}
	return nil
}

// powered is called (outside the machine's lock) after a boot (booted true,
// with its device) or a power-off: it starts or stops the machine's agent and
// records what the machine runs.
func (a agentFleet) powered(m *Machine, booted bool, dev string) {
	e := a.e
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	m.mu.Lock()
	prev := m.agent
	m.agent = nil
	m.mu.Unlock()
	if prev != nil {
		prev.cancel() // non-blocking: the reply to the BMC call must not wait for the agent
	}
	running := ""
	if booted && e.cfg.Agent != nil {
		switch {
		case dev == "pxe", dev == httpBootDevice:
			running = RunningAgent // a network boot: the agent
		case dev == "cdrom" && m.Media().Inserted:
			// a virtual CD: the deploy ISO boots the agent, a live ISO
			// its own operating system (mediumRunsAgent)
			running = RunningLiveISO
			if mediumRunsAgent(m.Media().File) {
				running = RunningAgent
			}
		case dev == "disk" && m.disk != "":
			running = RunningNoImage
			if diskHasImage(m.disk) {
				running = RunningImage
			}
		default:
			running = RunningFirmware
		}
	}
	m.mu.Lock()
	m.running, m.agentAddr = running, ""
	m.mu.Unlock()
	switch running {
	case RunningImage:
		e.log.Info("machine booted from disk: running the image", "machine", m.ID, "disk", m.disk)
	case RunningNoImage:
		e.log.Info("machine booted from disk: no image on it", "machine", m.ID, "disk", m.disk)
	case RunningLiveISO:
		e.log.Info("machine booted a live ISO from its virtual CD", "machine", m.ID)
	}
	if running != RunningAgent {
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.agents.Add(1)
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	run := &agentRun{cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.agent = run
	m.mu.Unlock()
	prev, m.lastAgent = m.lastAgent, run // the latest agent, stopped or not
	ac := e.cfg.Agent
	log := e.log.With("machine", m.ID, "component", "agent")
	spec := AgentSpec{Machine: m.ID, APIURL: ac.APIURL, MACs: append([]string(nil), m.HW.MACs...), Disk: m.disk,
		HeartbeatInterval: ac.HeartbeatInterval, Log: log,
		Ready: func(addr string) {
			m.mu.Lock()
			if m.agent == run {
				m.agentAddr = "http://" + addr
			}
			m.mu.Unlock()
		}}
	log.Info("machine booted the ramdisk: starting the agent", "device", dev)
	go func() {
		defer e.agents.Done()
		defer close(run.done)
		defer cancel()
		if prev != nil {
			<-prev.done // one agent per disk at a time: each waits for the one before
		}
		if ctx.Err() != nil {
			return
		}
		if err := ac.Run(ctx, spec); err != nil && ctx.Err() == nil {
			log.Error("agent stopped", "err", err)
		}
	}()
}

// diskHasImage reports whether the first MiB of the disk holds anything.
func diskHasImage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 1<<20)
	n, _ := io.ReadFull(f, b)
	for _, x := range b[:n] {
		if x != 0 {
			return true
		}
	}
	return false
}

// stopAgents stops every agent and waits for them.
func (a agentFleet) stopAgents() {
	e := a.e
	for _, m := range e.machines {
		m.agentMu.Lock()
		m.mu.Lock()
		run := m.agent
		m.agent = nil
		m.mu.Unlock()
		if run != nil {
			run.cancel()
		}
		m.agentMu.Unlock()
	}
	e.agents.Wait()
	if e.tmpDiskDir != "" {
		_ = os.RemoveAll(e.tmpDiskDir)
	}
}

// Disk is the machine's disk file ("" without Config.Agent).
func (m *Machine) Disk() string { return m.disk }
