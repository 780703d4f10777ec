package bmcemu

import (
	"context"

	"fmt"
	"net"
	"time"

	"github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/clock"
	"github.com/bougou/go-ipmi/pkg/hal"
	"github.com/bougou/go-ipmi/pkg/hal/mock"
	ipmiserver "github.com/bougou/go-ipmi/pkg/server"
	"github.com/bougou/go-ipmi/pkg/transport/udp"
	"github.com/bougou/go-ipmi/pkg/types"
)

// ipmiUserID is the user slot of the machine's account.
const ipmiUserID = 2

// ipmiFleet starts and stops every machine's IPMI endpoint (Config.IPMI).
type ipmiFleet struct{ e *Emulator }

// ipmiBMC is one machine's IPMI endpoint: go-ipmi's reference BMC whose
// chassis is the machine, on a loopback UDP socket wrapped by the knobs.
type ipmiBMC struct {
	m      *Machine
	b      *bmc.BMC
	srv    *ipmiserver.Server
	conn   *udp.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

func (f ipmiFleet) startIPMI(ctx context.Context) error {
	e := f.e
	for i, m := range e.machines {
		port := 0
		if e.cfg.IPMIBasePort > 0 {
			port = e.cfg.IPMIBasePort + i
		}
		b, err := f.newIPMI(m, net.JoinHostPort(e.cfg.IPMIHost, fmt.Sprint(port)))
		if err != nil {
			return err
		}
		e.mu.Lock()
		e.ipmis = append(e.ipmis, b)
		e.mu.Unlock()
		m.mu.Lock()
		m.ipmi, m.ipmiPort = b, b.conn.LocalAddr().(*net.UDPAddr).Port
		reject := m.knobs.RejectAuth
		m.mu.Unlock()
		b.applyAuth(reject)
	}
	return nil
}

func (f ipmiFleet) newIPMI(m *Machine, addr string) (*ipmiBMC, error) {
	info := bmc.DeviceInfo{DeviceID: 0x20, DeviceRevision: 1, FirmwareMajor: 1, IPMIVersion: 0x20,
		ManufacturerID: 0x0157, ProductID: 0x0001}
	var guid [16]byte
	copy(guid[:], m.UUID)
	h := &machineHAL{HAL: mock.New(), ch: &machineChassis{m: m}}
	b := bmc.New(info, guid, h, bmc.WithClock(clock.Real))
	u, err := b.Users.Add(ipmiUserID, m.Username)
	if err != nil {
		return nil, fmt.Errorf("ipmi user for %s: %w", m.ID, err)
	}
	u.SetPassword([]byte(m.password))
	u.Enabled = true
	u.ChannelAccess[1] = bmc.UserChannelAccess{MaxPrivilege: bmc.PrivilegeLevelAdministrator, Enabled: true}
	conn, err := udp.Listen(addr, udp.WithReadTimeout(time.Second))
	if err != nil {
		return nil, fmt.Errorf("ipmi endpoint for %s: %w", m.ID, err)
	}
	ib := &ipmiBMC{m: m, b: b, conn: conn, done: make(chan struct{})}
	ib.srv = ipmiserver.NewServer(b, &knobConn{Conn: conn, m: m, e: f.e},
		ipmiserver.WithCipherSuites([]types.CipherSuiteID{types.CipherSuiteID3, types.CipherSuiteID17}))
	ctx, cancel := context.WithCancel(context.Background())
	ib.cancel = cancel
	go func() {
		defer close(ib.done)
		_ = ib.srv.Serve(ctx)
	}()
	return ib, nil
}

// applyAuth makes the BMC refuse (or accept again) the machine's password.
func (b *ipmiBMC) applyAuth(reject bool) {
	pw := []byte(b.m.password)
	if reject {
		pw = []byte("rejected-" + randomPassword())
	}
	_ = b.b.Users.Update(ipmiUserID, func(u *bmc.User) error {
		u.SetPassword(pw)
		return nil
	})
}

func (f ipmiFleet) stopIPMI() {
	e := f.e
	e.mu.Lock()
	bs := e.ipmis
	e.ipmis = nil
	e.mu.Unlock()
	for _, b := range bs {
		b.cancel()
		_ = b.srv.Close()
		<-b.done
	}
}

// knobConn applies the machine's knobs to its IPMI packets: latency delays
// each reply, a dead BMC or a failed draw drops the packet.
type knobConn struct {
	*udp.Conn
	m *Machine
	e *Emulator
}

func (c *knobConn) ReadFrom(buf []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.Conn.ReadFrom(buf)
		if err != nil {
			return n, addr, err
		}
		k := c.m.call()
		if k.Dead || c.e.fails(k.FailureRate) {
			continue
		}
		return n, addr, nil
	}
}

func (c *knobConn) WriteTo(data []byte, addr net.Addr) (int, error) {
	k := c.m.Knobs()
	if k.Dead {
		return len(data), nil
	}
	if k.Latency > 0 {
		time.Sleep(k.Latency)
	}
	return c.Conn.WriteTo(data, addr)
}

// machineHAL is go-ipmi's in-memory HAL with the machine as its chassis.
type machineHAL struct {
	*mock.HAL
	ch *machineChassis
}

func (h *machineHAL) Chassis() hal.ChassisHAL { return h.ch }

// machineChassis maps IPMI chassis commands onto the machine.
type machineChassis struct{ m *Machine }

func (c *machineChassis) PowerState(context.Context) (bool, error) { return c.m.PoweredOn(), nil }

func (c *machineChassis) SetPower(_ context.Context, on bool) error {
	return c.m.applyPower(on, false)
}

func (c *machineChassis) PowerCycle(context.Context) error {
	if c.m.PoweredOn() {
		return c.m.applyPower(true, true)
	}
	return nil
}

func (c *machineChassis) ColdReset(context.Context) error { return c.PowerCycle(context.Background()) }

// WarmReset is what go-ipmi's handler calls for Chassis Control "soft
// shutdown" (ACPI power button): the emulated OS shuts down at once (a VM
// gets its power button pressed).
func (c *machineChassis) WarmReset(context.Context) error {
	return c.m.shutdown()
}

func (c *machineChassis) Identify(context.Context, uint8) error { return nil }

func (c *machineChassis) IntrusionState(context.Context) (bool, error) {
	return false, hal.ErrNotSupported
}

func (c *machineChassis) SetBootFlags(_ context.Context, f *types.BootOptionParam_BootFlags) error {
	if !f.BootFlagsValid {
		return c.m.setBoot(BootNone, OverrideDisabled, "")
	}
	target := BootNone
	switch f.BootDeviceSelector {
	case types.BootDeviceSelectorForcePXE:
		target = BootPxe
	case types.BootDeviceSelectorForceHardDrive, types.BootDeviceSelectorForceHardDriveSafe:
		target = BootHdd
	case types.BootDeviceSelectorForceCDROM, types.BootDeviceSelectorForceRemoteCDROM:
		target = BootCd
	case types.BootDeviceSelectorForceBIOSSetup:
		target = BootBios
	}
	enabled := OverrideOnce
	if f.Persist {
		enabled = OverrideContinuous
	}
	mode := ModeLegacy
	if f.BIOSBootType == types.BIOSBootTypeEFI {
		mode = ModeUEFI
	}
	return c.m.setBoot(target, enabled, mode)
}

func (c *machineChassis) GetBootFlags(context.Context) (*types.BootOptionParam_BootFlags, error) {
	target, enabled, mode := c.m.boot()
	f := &types.BootOptionParam_BootFlags{BootFlagsValid: enabled != OverrideDisabled,
		Persist: enabled == OverrideContinuous, BIOSBootType: types.BIOSBootType(mode == ModeUEFI)}
	switch target {
	case BootPxe:
		f.BootDeviceSelector = types.BootDeviceSelectorForcePXE
	case BootHdd:
		f.BootDeviceSelector = types.BootDeviceSelectorForceHardDrive
	case BootCd:
		f.BootDeviceSelector = types.BootDeviceSelectorForceCDROM
	case BootBios:
		f.BootDeviceSelector = types.BootDeviceSelectorForceBIOSSetup
	}
	return f, nil
}

func (c *machineChassis) SetBootInfoAcknowledge(context.Context, *types.BootOptionParam_BootInfoAcknowledge) error {
	return nil
}

func (c *machineChassis) GetBootInfoAcknowledge(context.Context) (*types.BootOptionParam_BootInfoAcknowledge, error) {
	return nil, hal.ErrNotSupported
}
