package bmcemu

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// QEMUConfig makes every machine a real qemu VM (software emulation,
// `-accel tcg`, SeaBIOS): powering on starts it, powering off kills it (a
// graceful shutdown presses the ACPI power button through QMP, then kills
// it after ShutdownTimeout), a reset restarts it, and when qemu exits the
// machine is off. The boot device picks the VM's boot order: Pxe boots the
// NIC's stock iPXE ROM (qemu's DHCP server hands it BootFile), Cd the
// inserted virtual media, Hdd its disk. Each machine's files live in
// <StateDir>/<id>/: disk.img, console.log (the serial console, every boot
// appended after a "=== ... power on, boot device X ===" line), qemu.log
// and qmp.sock.
//
// Networking is qemu's user mode with restrict=on: the guest reaches the
// host only through Forwards, and the host reaches one guest port through a
// loopback port per machine (GuestPort).
//
// The firmware is SeaBIOS, or OVMF for machines in UEFI mode when
// UEFIFirmware is set. Virtual media inserted or ejected while the VM runs
// changes the medium in its CD drive at once (QMP).
type QEMUConfig struct {
	Binary    string // default qemu-system-x86_64
	MemoryMiB int    // per VM (default 512)
	DiskBytes int64  // per VM, a sparse raw file (default 1 GiB)
	// BootFile is the boot file qemu's DHCP server names on network boot,
	// e.g. http://10.0.2.100:6385/boot/boot.ipxe (iPXE fetches http URLs).
	BootFile string
	// Forwards are the guest's only ways out: a TCP connection to Guest
	// (an address in 10.0.2.0/24, not 10.0.2.2 or .3) reaches Host (on
	// 127.0.0.0/8).
	Forwards []Forward
	// GuestPort, if set, is forwarded from a free 127.0.0.1 port per machine
	// (Status.ForwardedPort), e.g. the agent's command API.
	GuestPort int
	// Netcat is the program qemu runs per forwarded connection, with the
	// host address and port as arguments (default: "busybox nc" when
	// busybox is on PATH, else "nc").
	Netcat          string
	ShutdownTimeout time.Duration // graceful shutdown before the kill (default 30 s)
	// NoNetworkBoot gives the NIC no option ROM: the VM cannot network-boot
	// (a Pxe override boots the disk), as a machine deployed only through
	// virtual media.
	NoNetworkBoot bool
	// UEFIFirmware is OVMF's code image (e.g. Debian's
	// /usr/share/OVMF/OVMF_CODE_4M.fd, package ovmf): with it, a machine
	// whose BootSourceOverrideMode is UEFI (the default then) boots OVMF,
	// with its own copy of the variable store next to it (the file named
	// with VARS for CODE); Legacy boots SeaBIOS. Without it every machine
	// is a BIOS machine.
	UEFIFirmware string
}

// Forward is one guest → host TCP forward.
type Forward struct {
	Guest string // e.g. 10.0.2.100:6385
	Host  string // e.g. 127.0.0.1:6385
}

// vmFleet runs the machines as qemu VMs (Config.QEMU): it checks the
// configuration, lays out each machine's files, and starts, stops and
// changes the media of a machine's VM as its power and virtual media change.
type vmFleet struct{ e *Emulator }

// qemuVM is one running qemu process.
type qemuVM struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when qemu has exited
	qmp  string        // QMP socket
	link io.Closer     // the UEFI HTTP boot DHCP link (httpboot.go), closed when qemu exits
}

// hardware is what inspection finds in a VM: one CPU, its memory and disk,
// one NIC.
func (q *QEMUConfig) hardware() Hardware {
	return Hardware{Sockets: 1, CoresPerSocket: 1, ThreadsPerCore: 1, Arch: "x86",
		DIMMs: 1, DIMMMiB: q.MemoryMiB, DisksBytes: []int64{q.DiskBytes}}
}

// setupQEMU checks the configuration and fills in its defaults.
func (v vmFleet) setupQEMU() error {
	e := v.e
	q := e.cfg.QEMU
	if e.cfg.Agent != nil {
		return errors.New("bmc emulator: QEMU and Agent exclude each other (the VM runs its own agent)")
	}
	if q.Binary == "" {
		q.Binary = "qemu-system-x86_64"
	}
	bin, err := exec.LookPath(q.Binary)
	if err != nil {
		return fmt.Errorf("bmc emulator: qemu: %w", err)
	}
	q.Binary = bin
	if q.MemoryMiB <= 0 {
		q.MemoryMiB = 512
	}
	if q.DiskBytes <= 0 {
		q.DiskBytes = 1 << 30
	}
	if q.ShutdownTimeout <= 0 {
		q.ShutdownTimeout = 30 * time.Second
	}
	if q.Netcat == "" {
		q.Netcat = "nc"
		if bb, err := exec.LookPath("busybox"); err == nil {
			q.Netcat = bb + " nc"
		}
	}
	for _, f := range q.Forwards {
		g, err := netip.ParseAddrPort(f.Guest)
		if err != nil || !netip.MustParsePrefix("10.0.2.0/24").Contains(g.Addr()) ||
			g.Addr() == netip.MustParseAddr("10.0.2.2") || g.Addr() == netip.MustParseAddr("10.0.2.3") {
			return fmt.Errorf("bmc emulator: forward guest address %q is not an address:port in 10.0.2.0/24 (other than .2 and .3)", f.Guest)
		}
		h, err := netip.ParseAddrPort(f.Host)
		if err != nil || !h.Addr().IsLoopback() {
			return fmt.Errorf("bmc emulator: forward host address %q is not a loopback address:port", f.Host)
		}
	}
	if q.UEFIFirmware != "" {
		vars := uefiVarsTemplate(q.UEFIFirmware)
		for _, f := range []string{q.UEFIFirmware, vars} {
			if _, err := os.Stat(f); err != nil {
				return fmt.Errorf("bmc emulator: UEFI firmware: %w", err)
			}
		}
	}
	if strings.ContainsAny(e.stateDir+q.Netcat+q.BootFile+q.UEFIFirmware, ",") {
		return fmt.Errorf("bmc emulator: qemu: the state directory, netcat command and boot file must not hold a comma")
	}
	return nil
}

// uefiVarsTemplate is the variable store that goes with OVMF's code image:
// the same name with VARS for CODE.
func uefiVarsTemplate(code string) string {
	return filepath.Join(filepath.Dir(code), strings.Replace(filepath.Base(code), "CODE", "VARS", 1))
}

// uefiArgs are the flash drives of an OVMF boot: the code read-only, the
// machine's own variable store (copied from the template on first use).
func (v vmFleet) uefiArgs(m *Machine) ([]string, error) {
	e := v.e
	q := e.cfg.QEMU
	vars := filepath.Join(e.stateDir, m.ID, "OVMF_VARS.fd")
	if _, err := os.Stat(vars); err != nil {
		b, err := os.ReadFile(uefiVarsTemplate(q.UEFIFirmware))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(vars, b, 0o644); err != nil {
			return nil, err
		}
	}
	return []string{"-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + q.UEFIFirmware,
		"-drive", "if=pflash,format=raw,unit=1,file=" + vars}, nil
}

// setupVMs creates every machine's state directory and disk, and picks its
// forwarded port.
func (v vmFleet) setupVMs() error {
	e := v.e
	q := e.cfg.QEMU
	for _, m := range e.machines {
		d := filepath.Join(e.stateDir, m.ID)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("bmc emulator: %s: %w", m.ID, err)
		}
		m.disk = filepath.Join(d, "disk.img")
		if err := ensureSize(m.disk, q.DiskBytes); err != nil {
			return fmt.Errorf("bmc emulator: disk of %s: %w", m.ID, err)
		}
		if q.GuestPort > 0 {
			p, err := freeLoopbackPort()
			if err != nil {
				return fmt.Errorf("bmc emulator: forwarded port of %s: %w", m.ID, err)
			}
			m.fwdPort = p
		}
	}
	return nil
}

// ensureSize creates path sparse, or grows it, to n bytes.
func ensureSize(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < n {
		err = f.Truncate(n)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Console is the file the machine's serial console is written to (QEMU
// mode), "" otherwise.
func (m *Machine) Console() string {
	if m.emu == nil || m.emu.cfg.QEMU == nil {
		return ""
	}
	return filepath.Join(m.emu.stateDir, m.ID, "console.log")
}

// vmPowered starts (booted, with the device) or stops the machine's VM,
// under agentMu. A VM that fails to start leaves the machine off.
func (v vmFleet) vmPowered(m *Machine, booted bool, dev string) error {
	e := v.e
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	v.killVM(m)
	if !booted {
		return nil
	}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.vms.Add(1)
	}
	e.mu.Unlock()
	if closed {
		return errors.New("the emulator is shutting down")
	}
	vm, err := v.startVM(m, dev)
	if err != nil {
		e.vms.Done()
		m.mu.Lock()
		m.power, m.running = false, ""
		m.mu.Unlock()
		e.log.Error("virtual machine did not start", "machine", m.ID, "err", err)
		return fmt.Errorf("starting the virtual machine of %s: %w", m.ID, err)
	}
	m.mu.Lock()
	m.vm, m.running = vm, RunningVM
	m.mu.Unlock()
	go func() {
		defer e.vms.Done()
		err := vm.cmd.Wait()
		if vm.link != nil {
			vm.link.Close()
		}
		close(vm.done)
		m.mu.Lock()
		mine := m.vm == vm
		if mine {
			m.vm, m.power, m.running = nil, false, ""
		}
		m.mu.Unlock()
		if mine {
			e.log.Info("virtual machine exited: power off", "machine", m.ID, "exit", fmt.Sprint(err))
		}
	}()
	return nil
}

// RunningVM is what a machine runs in QEMU mode while its VM is up.
const RunningVM = "vm"

// startVM runs qemu for the machine, booting dev (pxe, cdrom, disk, bios).
func (v vmFleet) startVM(m *Machine, dev string) (*qemuVM, error) {
	e := v.e
	q := e.cfg.QEMU
	d := filepath.Join(e.stateDir, m.ID)
	md := m.Media()
	_, _, bootMode := m.boot()
	uefi := bootMode == ModeUEFI && q.UEFIFirmware != ""
	httpURI := m.HTTPBootURI()
	if dev == httpBootDevice && (!uefi || httpURI == "") {
		e.log.Warn("UefiHttp boot needs UEFI mode, QEMUConfig.UEFIFirmware and an HttpBootUri: booting the disk", "machine", m.ID)
		dev = "disk"
	}
	order := map[string]int{"disk": 1, "nic": 2, "cd": 3}
	switch {
	case dev == "pxe", dev == httpBootDevice:
		order = map[string]int{"nic": 1, "disk": 2, "cd": 3}
	case dev == "cdrom" && md.Inserted:
		order = map[string]int{"cd": 1, "disk": 2, "nic": 3}
	}
	netdev := "user,id=n0,restrict=on"
	if q.BootFile != "" {
		netdev += ",bootfile=" + q.BootFile
	}
	for _, f := range q.Forwards {
		h, _ := netip.ParseAddrPort(f.Host)
		netdev += fmt.Sprintf(",guestfwd=tcp:%s-cmd:%s %s %d", f.Guest, q.Netcat, h.Addr(), h.Port())
	}
	if m.fwdPort > 0 {
		netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", m.fwdPort, q.GuestPort)
	}
	console := filepath.Join(d, "console.log")
	qmp := filepath.Join(d, "qmp.sock")
	_ = os.Remove(qmp)
	_ = os.Remove(filepath.Join(d, serialSocket))
	args := []string{"-accel", "tcg", "-m", strconv.Itoa(q.MemoryMiB), "-smp", "1", "-display", "none",
		"-name", m.ID, "-uuid", m.UUID,
		// The serial port is a socket for SOL (sol.go), logged to console.log.
		"-chardev", "socket,id=s0,server=on,wait=off,path=" + filepath.Join(d, serialSocket) + ",logfile=" + console + ",logappend=on",
		"-serial", "chardev:s0",
		"-qmp", "unix:" + qmp + ",server=on,wait=off",
		"-drive", "file=" + m.disk + ",format=raw,if=none,id=d0",
		"-device", fmt.Sprintf("virtio-blk-pci,drive=d0,bootindex=%d", order["disk"]),
		"-netdev", netdev,
	}
	var link io.Closer
	switch {
	case dev == httpBootDevice:
		l, netArgs, err := v.httpBootNet(m, httpURI)
		if err != nil {
			return nil, fmt.Errorf("UEFI HTTP boot network: %w", err)
		}
		link, args = l, append(args, netArgs...)
	case q.NoNetworkBoot:
		args = append(args, "-device", fmt.Sprintf("virtio-net-pci,netdev=n0,mac=%s,romfile=", m.HW.MACs[0]))
	default:
		args = append(args, "-device", fmt.Sprintf("virtio-net-pci,netdev=n0,mac=%s,bootindex=%d", m.HW.MACs[0], order["nic"]))
	}
	// The CD drive is always there (empty without media), so media can be
	// changed while the VM runs.
	cd := "if=none,id=cd0,media=cdrom,readonly=on"
	if md.Inserted {
		cd = "file=" + md.File + ",format=raw," + cd
	}
	args = append(args, "-drive", cd, "-device", fmt.Sprintf("ide-cd,drive=cd0,id=%s,bootindex=%d", cdDevice, order["cd"]))
	if !strings.Contains(netdev, "restrict=on") {
		return nil, errors.New("user networking without restrict=on") // never
	}
	firmware := "bios"
	started := false
	if link != nil {
		defer func() {
			if !started {
				link.Close()
			}
		}()
	}
	if uefi {
		fw, err := v.uefiArgs(m)
		if err != nil {
			return nil, fmt.Errorf("UEFI variable store: %w", err)
		}
		args, firmware = append(args, fw...), "uefi"
	}
	mark := fmt.Sprintf("\n=== %s power on, boot device %s, firmware %s ===\n", time.Now().UTC().Format(time.RFC3339Nano), dev, firmware)
	if err := appendFile(console, mark); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(d, "qemu.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339), q.Binary, strings.Join(args, " "))
	cmd := exec.Command(q.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The VM dies with the emulator, however the emulator ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e.log.Info("virtual machine started", "machine", m.ID, "boot", dev, "pid", cmd.Process.Pid, "console", console)
	started = true
	return &qemuVM{cmd: cmd, done: make(chan struct{}), qmp: qmp, link: link}, nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// killVM stops the machine's VM at once and waits for qemu to exit.
func (v vmFleet) killVM(m *Machine) {
	e := v.e
	m.mu.Lock()
	vm := m.vm
	m.vm = nil
	m.mu.Unlock()
	if vm == nil {
		return
	}
	_ = vm.cmd.Process.Kill()
	select {
	case <-vm.done:
	case <-time.After(10 * time.Second):
		e.log.Warn("qemu did not exit after SIGKILL", "machine", m.ID, "pid", vm.cmd.Process.Pid)
	}
}

// shutdownVM presses the VM's ACPI power button (QMP system_powerdown) and
// kills it if it is still running after ShutdownTimeout; the machine is off
// when qemu has exited. It returns at once.
func (v vmFleet) shutdownVM(m *Machine) {
	e := v.e
	m.mu.Lock()
	vm := m.vm
	m.mu.Unlock()
	if vm == nil {
		m.applyPower(false, false)
		return
	}
	// A busy qemu may refuse or drop a QMP connection now and then: try a
	// few times before the hard way.
	var err error
	for try := range 3 {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if err = qmpCommand(vm.qmp, "system_powerdown", nil); err == nil {
			break
		}
	}
	if err != nil {
		e.log.Warn("graceful shutdown: QMP failed, killing the VM", "machine", m.ID, "err", err)
		_ = vm.cmd.Process.Kill()
		return
	}
	go func() {
		t := time.NewTimer(e.cfg.QEMU.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-vm.done:
		case <-t.C:
			e.log.Info("graceful shutdown timed out: killing the VM", "machine", m.ID)
			_ = vm.cmd.Process.Kill()
		}
	}()
}

// cdDevice is the qemu id of every VM's CD drive.
const cdDevice = "cd"

// vmMediaChanged puts the machine's current virtual media into its running
// VM's CD drive (or empties it), as a BMC's virtual media shows up in a
// running server. Called with mediaMu held.
func (v vmFleet) vmMediaChanged(m *Machine) {
	e := v.e
	if e.cfg.QEMU == nil {
		return
	}
	m.agentMu.Lock() // no VM starts or stops meanwhile
	defer m.agentMu.Unlock()
	m.mu.Lock()
	vm, md := m.vm, m.media
	m.mu.Unlock()
	if vm == nil {
		return // the next power-on attaches it
	}
	var err error
	if md.inserted {
		err = qmpCommand(vm.qmp, "blockdev-change-medium", map[string]any{"id": cdDevice, "filename": md.file,
			"format": "raw", "read-only-mode": "read-only"})
	} else {
		err = qmpCommand(vm.qmp, "eject", map[string]any{"id": cdDevice, "force": true})
	}
	if err != nil {
		e.log.Warn("virtual media: changing the running VM's CD failed", "machine", m.ID, "err", err)
	}
}

// qmpCommand runs one QMP command (args may be nil) on the socket.
func qmpCommand(sock, command string, args map[string]any) error {
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	read := func() (map[string]any, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			var msg map[string]any
			if err := json.Unmarshal(line, &msg); err != nil {
				return nil, fmt.Errorf("QMP: %w", err)
			}
			if _, ev := msg["event"]; !ev {
				return msg, nil
			}
		}
	}
	if _, err := read(); err != nil { // the greeting
		return err
	}
	enc := json.NewEncoder(conn)
	cmd := map[string]any{"execute": command}
	if args != nil { // a nil map would be sent as "arguments": null, which qemu refuses
		cmd["arguments"] = args
	}
	for _, c := range []map[string]any{{"execute": "qmp_capabilities"}, cmd} {
		if err := enc.Encode(c); err != nil {
			return err
		}
		msg, err := read()
		if err != nil {
			return err
		}
		if e, ok := msg["error"]; ok {
			return fmt.Errorf("QMP %s: %v", c["execute"], e)
		}
	}
	return nil
}

// stopVMs kills every VM and waits for them (Close).
func (v vmFleet) stopVMs() {
	e := v.e
	if e.cfg.QEMU == nil {
		return
	}
	for _, m := range e.machines {
		m.agentMu.Lock()
		v.killVM(m)
		m.agentMu.Unlock()
	}
	e.vms.Wait()
}
