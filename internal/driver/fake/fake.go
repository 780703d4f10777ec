// Package fake is the fake-hardware driver: every interface succeeds at once,
// like Ironic's fake interfaces, and remembers power state and boot device.
// Per-node knobs in driver_info slow operations down or make them fail, so
// tests and demos can reach every state:
//
//	fake_<op>_delay   seconds (number or string) before <op> completes
//	fake_wait         comma list of operations that park in their wait state
//	                  until a heartbeat: deploy, clean, inspect, rescue, service
//	fake_running      how many heartbeats find a parked operation still
//	                  running (its agent's command not finished), counted in
//	                  driver_internal_info fake_continues over the node's life
//	fake_fail         comma list of operations that fail: verify, power,
//	                  power_state (reads), deploy, undeploy, clean, inspect,
//	                  rescue, unrescue, adopt, service, boot_device, and
//	                  continue (a heartbeat finds the parked operation failed)
//
// <op> is one of verify, power, deploy, undeploy, clean, inspect, rescue,
// unrescue, adopt, service, boot.
package fake

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Hardware implements every driver interface for fake-hardware nodes. It is
// safe for concurrent use; its memory of power and boot device is per node UUID.
type Hardware struct {
	// Sleep waits d or until ctx ends; tests replace it. Nil means real time.
	Sleep func(ctx context.Context, d time.Duration) error

	mu    sync.Mutex
	power map[string]string
	boot  map[string]driver.BootDevice
}

// New returns a fake with empty memory.
func New() *Hardware {
	return &Hardware{power: map[string]string{}, boot: map[string]driver.BootDevice{}}
}

// Name is the hardware type and interface name Anvil registers this under.
const Name = "fake-hardware"

// Interface is the implementation name of each fake interface ("fake").
const Interface = "fake"

// Kinds lists the interface kinds fake-hardware fills, with its implementation
// names (the first is the default) — network and storage are "noop" as in Ironic.
func Kinds() map[string][]string {
	m := map[string][]string{}
	for _, k := range model.InterfaceNames {
		m[k] = []string{Interface}
	}
	m["network"] = []string{"noop", "flat"}
	m["storage"] = []string{"noop"}
	return m
}

// Register adds fake-hardware and its interfaces to r.
func (h *Hardware) Register(r *driver.Registry) {
	r.AddHardwareType(driver.HardwareType{Name: Name, Supported: Kinds(), AcceptsAny: true, Properties: map[string]string{
		"fake_fail":        "Comma-separated operations that fail: verify, power, power_state, deploy, undeploy, clean, inspect, rescue, unrescue, adopt, service, boot_device. Optional.",
		"fake_power_delay": "Seconds each power action takes. Also fake_deploy_delay, fake_clean_delay, fake_inspect_delay, fake_rescue_delay, fake_unrescue_delay, fake_adopt_delay, fake_service_delay, fake_verify_delay, fake_undeploy_delay, fake_boot_delay. Optional.",
	}})
	for _, k := range model.InterfaceNames {
		r.AddInterface(k, Interface, h)
	}
	r.AddInterface("boot", Interface, NewBoot())
	r.AddInterface("network", "noop", h)
	r.AddInterface("network", "flat", h)
	r.AddInterface("storage", "noop", h)
}

// SetPower changes the remembered power state behind the conductor's back (tests).
func (h *Hardware) SetPower(nodeUUID, state string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.power[nodeUUID] = state
}

// Validate checks the knobs parse.
func (h *Hardware) Validate(t *driver.Task) error {
	n := t.Node
	for k, v := range n.DriverInfo {
		if strings.HasPrefix(k, "fake_") && strings.HasSuffix(k, "_delay") {
			if _, err := seconds(v); err != nil {
				return fmt.Errorf("driver_info %s: %w", k, err)
			}
		}
		if k == "fake_running" {
			if _, err := number(v, "heartbeats"); err != nil {
				return fmt.Errorf("driver_info %s: %w", k, err)
			}
		}
		if k == "fake_fail" || k == "fake_wait" {
			if _, err := opList(v); err != nil {
				return fmt.Errorf("driver_info %s: %w", k, err)
			}
		}
	}
	return nil
}

// op waits the node's delay for name and fails if name is in fake_fail.
func (h *Hardware) op(ctx context.Context, n *model.Node, delayName, failName string) error {
	d, err := seconds(n.DriverInfo["fake_"+delayName+"_delay"])
	if err != nil {
		return err
	}
	if d > 0 {
		sleep := h.Sleep
		if sleep == nil {
			sleep = clock.Sleep
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
	if Fails(n, failName) {
		return fmt.Errorf("fake %s failure requested by driver_info fake_fail", failName)
	}
	return nil
}

// Fails reports whether op is listed in the node's fake_fail knob.
func Fails(n *model.Node, op string) bool { return listed(n, "fake_fail", op) }

// Waits reports whether op is listed in the node's fake_wait knob.
func Waits(n *model.Node, op string) bool { return listed(n, "fake_wait", op) }

// result is Wait when op is in fake_wait.
func result(n *model.Node, op string) driver.Result {
	if Waits(n, op) {
		return driver.Wait
	}
	return driver.Done
}

// Continue finishes an operation parked by fake_wait (the callback
// arrived), unless the first fake_running heartbeats find it still
// running, or fake_fail lists continue.
func (h *Hardware) Continue(ctx context.Context, t *driver.Task, op string) (driver.Result, error) {
	n := t.Node
	if Fails(n, "continue") {
		return driver.Done, fmt.Errorf("fake %s failed on the agent", op)
	}
	running, _ := number(n.DriverInfo["fake_running"], "heartbeats")
	seen, _ := n.DriverInternalInfo["fake_continues"].(float64)
	if seen < running {
		if n.DriverInternalInfo == nil {
			n.DriverInternalInfo = model.JSON{}
		}
		n.DriverInternalInfo["fake_continues"] = seen + 1
		return driver.Wait, nil
	}
	return driver.Done, nil
}

// FinishStep implements driver.StepFinisher: for an op fake_finish lists
// it marks the node (driver_internal_info fake_finished = op), so a test
// sees when it ran; fake_fail "finish" fails it.
func (h *Hardware) FinishStep(ctx context.Context, t *driver.Task, op string) error {
	n := t.Node
	if Fails(n, "finish") {
		return fmt.Errorf("fake %s failed to finish", op)
	}
	if listed(n, "fake_finish", op) {
		if n.DriverInternalInfo == nil {
			n.DriverInternalInfo = model.JSON{}
		}
		n.DriverInternalInfo["fake_finished"] = op
	}
	return nil
}

func listed(n *model.Node, knob, op string) bool {
	ops, _ := opList(n.DriverInfo[knob])
	for _, f := range ops {
		if f == op {
			return true
		}
	}
	return false
}

// opList reads a fake_fail or fake_wait knob: a comma-separated string or
// a list of strings; anything else is an error.
func opList(v any) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case nil:
	case string:
		for _, f := range strings.Split(x, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not an operation name", e)
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("%v is neither a comma-separated string nor a list of operations", v)
	}
	return out, nil
}

func seconds(v any) (time.Duration, error) {
	f, err := number(v, "seconds")
	return time.Duration(f * float64(time.Second)), err
}

// number reads a knob's number of unit: a JSON number or a string, in
// [0, 86400].
func number(v any, unit string) (float64, error) {
	var f float64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		f = x
	case int:
		f = float64(x)
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of %s", x, unit)
		}
		f = p
	default:
		return 0, fmt.Errorf("%v is not a number of %s", v, unit)
	}
	if !(f >= 0 && f <= 86400) { // also refuses NaN
		if math.IsNaN(f) {
			return 0, fmt.Errorf("%v is not a number of %s", v, unit)
		}
		return 0, fmt.Errorf("%v %s is out of range [0, 86400]", f, unit)
	}
	return f, nil
}

// Verify checks the (fake) BMC answers: it is what "manage" runs in verifying.
func (h *Hardware) Verify(ctx context.Context, t *driver.Task) error {
	if err := h.op(ctx, t.Node, "verify", "verify"); err != nil {
		return err
	}
	if Fails(t.Node, "power") {
		return fmt.Errorf("fake power failure requested by driver_info fake_fail")
	}
	return nil
}

// PowerState returns the remembered state, else the node's recorded one,
// after fake_power_state_delay.
func (h *Hardware) PowerState(ctx context.Context, t *driver.Task) (string, error) {
	if err := h.op(ctx, t.Node, "power_state", "power_state"); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.power[t.Node.UUID]; ok {
		return s, nil
	}
	return t.Node.PowerState, nil
}

// SetPowerState remembers the state a power action leaves.
func (h *Hardware) SetPowerState(ctx context.Context, t *driver.Task, target string) error {
	if err := h.op(ctx, t.Node, "power", "power"); err != nil {
		return err
	}
	h.SetPower(t.Node.UUID, fsm.PowerResult(target))
	return nil
}

// BootDevice returns the remembered boot device (disk, persistent by default).
func (h *Hardware) BootDevice(ctx context.Context, t *driver.Task) (driver.BootDevice, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, ok := h.boot[t.Node.UUID]; ok {
		return b, nil
	}
	return driver.BootDevice{Device: "disk", Persistent: true}, nil
}

// SetBootDevice remembers dev.
func (h *Hardware) SetBootDevice(ctx context.Context, t *driver.Task, dev driver.BootDevice) error {
	if err := h.op(ctx, t.Node, "boot", "boot_device"); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.boot[t.Node.UUID] = dev
	return nil
}

// SupportedBootDevices lists Ironic's fake devices.
func (h *Hardware) SupportedBootDevices(ctx context.Context, t *driver.Task) ([]string, error) {
	return []string{"pxe", "disk"}, nil
}

// Deploy "writes the instance".
func (h *Hardware) Deploy(ctx context.Context, t *driver.Task) (driver.Result, error) {
	return result(t.Node, "deploy"), h.op(ctx, t.Node, "deploy", "deploy")
}

// TearDown "removes the instance".
func (h *Hardware) TearDown(ctx context.Context, t *driver.Task) error {
	return h.op(ctx, t.Node, "undeploy", "undeploy")
}

// Adopt takes over a deployed node.
func (h *Hardware) Adopt(ctx context.Context, t *driver.Task) error {
	return h.op(ctx, t.Node, "adopt", "adopt")
}

// Inspect fills nothing, like Ironic's fake inspect, except that the MACs in
// driver_info fake_inspect_macs (comma list) are reported as found NICs.
func (h *Hardware) Inspect(ctx context.Context, t *driver.Task) (driver.Result, error) {
	if err := h.op(ctx, t.Node, "inspect", "inspect"); err != nil {
		return driver.Done, err
	}
	macs, _ := t.Node.DriverInfo["fake_inspect_macs"].(string)
	for _, mac := range strings.Split(macs, ",") {
		if mac = strings.TrimSpace(mac); mac != "" {
			t.Ports = append(t.Ports, &model.Port{Address: mac, PXEEnabled: true})
		}
	}
	return result(t.Node, "inspect"), nil
}

// Rescue boots the "rescue environment".
func (h *Hardware) Rescue(ctx context.Context, t *driver.Task) (driver.Result, error) {
	return result(t.Node, "rescue"), h.op(ctx, t.Node, "rescue", "rescue")
}

// Unrescue returns to the instance.
func (h *Hardware) Unrescue(ctx context.Context, t *driver.Task) error {
	return h.op(ctx, t.Node, "unrescue", "unrescue")
}
