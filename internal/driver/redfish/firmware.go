package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/stmcginnis/gofish/common"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Firmware is the redfish firmware interface (Ironic's RedfishFirmware):
// the update step hands each image to the BMC's UpdateService
// (SimpleUpdate with ImageURI, and Targets when the BMC manages several
// systems), follows the Task it answers until it ends, reboots the node
// after a BIOS update, and caches the BIOS and BMC versions the BMC
// reports (the system's BiosVersion, its manager's FirmwareVersion).
type Firmware struct{ d *Driver }

// Firmware returns the driver's firmware interface.
func (d *Driver) Firmware() *Firmware { return &Firmware{d: d} }

var (
	_ driver.Stepper = (*Firmware)(nil)
	_ driver.Cacher  = (*Firmware)(nil)
)

// StepUpdate is the firmware interface's step.
const StepUpdate = "update"

// Firmware components (Ironic's redfish_utils BIOS, BMC, NIC prefix).
const (
	ComponentBIOS = "bios"
	ComponentBMC  = "bmc"
	nicPrefix     = "nic:"
)

var updateArgs = map[string]driver.ArgInfo{"settings": {Description: "A list of dicts with firmware components to be updated", Required: true}}

// Validate checks driver_info without contacting the BMC.
func (f *Firmware) Validate(t *driver.Task) error {
	n := t.Node
	_, err := parseInfo(n)
	return err
}

// Steps offers update as a clean, deploy and service step (priority 0).
func (f *Firmware) Steps(n *model.Node, iface string, kind driver.StepKind) []driver.Step {
	if iface != "firmware" {
		return nil
	}
	return []driver.Step{{Interface: "firmware", Step: StepUpdate, ArgsInfo: updateArgs}}
}

// ExecuteStep runs update.
func (f *Firmware) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	if s.Step != StepUpdate {
		return driver.Done, fmt.Errorf("the redfish firmware interface has no step %s", s.Step)
	}
	updates, err := ParseFirmwareUpdates(s.Args["settings"])
	if err != nil {
		return driver.Done, err
	}
	for _, u := range updates {
		if err := f.update(ctx, t, u); err != nil {
			return driver.Done, err
		}
	}
	return driver.Done, f.Cache(ctx, t)
}

// FirmwareUpdate is one entry of update's settings.
type FirmwareUpdate struct {
	Component, URL string
	Wait           int // seconds to wait after the update (0: none)
}

var nicComponent = regexp.MustCompile("^" + nicPrefix + ".*")

// ParseFirmwareUpdates checks update's settings against Ironic's
// _FIRMWARE_INTERFACE_UPDATE_SCHEMA, answering its message.
func ParseFirmwareUpdates(raw any) ([]FirmwareUpdate, error) {
	fail := func(msg string) error {
		return fmt.Errorf("Invalid firmware update %s. Errors: %s", pyrepr.Repr(raw), msg)
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fail(pyrepr.Repr(raw) + " is not of type 'array'")
	}
	if len(list) == 0 {
		return nil, fail("[] should be non-empty")
	}
	out := make([]FirmwareUpdate, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fail(pyrepr.Repr(item) + " is not of type 'object'")
		}
		for _, req := range []string{"component", "url"} {
			if _, ok := m[req]; !ok {
				return nil, fail(fmt.Sprintf("'%s' is a required property", req))
			}
		}
		for k := range m {
			if k != "component" && k != "url" && k != "wait" {
				return nil, fail(fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected)", k))
			}
		}
		comp, ok := m["component"].(string)
		if !ok {
			return nil, fail(pyrepr.Repr(m["component"]) + " is not of type 'string'")
		}
		if comp != ComponentBIOS && comp != ComponentBMC && !nicComponent.MatchString(comp) {
			return nil, fail(pyrepr.Repr(comp) + " is not valid under any of the given schemas")
		}
		u, ok := m["url"].(string)
		if !ok {
			return nil, fail(pyrepr.Repr(m["url"]) + " is not of type 'string'")
		}
		if u == "" {
			return nil, fail("'' should be non-empty")
		}
		fu := FirmwareUpdate{Component: comp, URL: u}
		if w, ok := m["wait"]; ok {
			n, isNum := w.(float64)
			if !isNum || n != float64(int(n)) {
				return nil, fail(pyrepr.Repr(w) + " is not of type 'integer'")
			}
			if n < 1 {
				return nil, fail(pyrepr.Repr(w) + " is less than the minimum of 1")
			}
			fu.Wait = int(n)
		}
		out = append(out, fu)
	}
	return out, nil
}

// Task states that end a Redfish Task.
var taskEnded = map[string]bool{"Completed": true, "Exception": true, "Killed": true, "Cancelled": true, "Interrupted": true}

// update applies one image and waits for its Task.
func (f *Firmware) update(ctx context.Context, t *driver.Task, u FirmwareUpdate) error {
	n := t.Node
	c, sysPath, err := f.d.target(ctx, n)
	if err != nil {
		return err
	}
	action, err := simpleUpdateTarget(c)
	if err != nil {
		return fmt.Errorf("Firmware update failed for node %s: %w", n.UUID, err)
	}
	body := map[string]any{"ImageURI": u.URL, "TransferProtocol": "HTTP"} // as sushy's simple_update
	if col, err := common.GetCollection(c, "/redfish/v1/Systems"); err == nil && len(col.ItemLinks) > 1 {
		body["Targets"] = []string{sysPath}
	}
	f.d.cfg.Log.Info("applying new firmware", "node", n.UUID, "component", u.Component, "url", u.URL)
	resp, err := c.Post(action, body)
	if err != nil {
		return fmt.Errorf("Firmware update failed for node %s, component %s: %w", n.UUID, u.Component, err)
	}
	monitor := resp.Header.Get("Location")
	var task struct {
		ID    string `json:"@odata.id"`
		State string `json:"TaskState"`
	}
	if monitor == "" {
		_ = decodeBody(resp.Body, &task)
		monitor = task.ID
	}
	resp.Body.Close()
	if monitor != "" {
		if err := f.waitTask(ctx, c, n, u, monitor); err != nil {
			return err
		}
	}
	if u.Component == ComponentBIOS {
		// a BIOS image is applied while the system restarts (Ironic reboots)
		if err := f.d.SetPowerState(ctx, t, fsm.Rebooting); err != nil {
			return fmt.Errorf("rebooting node %s after its BIOS update: %w", n.UUID, err)
		}
		t.Node.PowerState = fsm.PowerOn
	}
	if u.Wait > 0 {
		if err := f.d.sleep(ctx, time.Duration(u.Wait)*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// waitTask polls the task until it ends (Config.FirmwareTimeout).
func (f *Firmware) waitTask(ctx context.Context, c *conn, n *model.Node, u FirmwareUpdate, monitor string) error {
	deadline := time.Now().Add(f.d.cfg.FirmwareTimeout)
	for {
		var task struct {
			State    string `json:"TaskState"`
			Status   string `json:"TaskStatus"`
			Messages []struct {
				Message string `json:"Message"`
			} `json:"Messages"`
		}
		if err := c.getJSON(monitor, &task); err != nil {
			return fmt.Errorf("Firmware update failed for node %s, component %s: reading task %s: %w", n.UUID, u.Component, monitor, err)
		}
		if taskEnded[task.State] {
			if task.State == "Completed" && (task.Status == "" || task.Status == "OK") {
				return nil
			}
			var msgs []string
			for _, m := range task.Messages {
				msgs = append(msgs, m.Message)
			}
			return fmt.Errorf("Firmware update failed for node %s, firmware %s. Error: %s", n.UUID, u.URL, strings.Join(msgs, "; "))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Firmware update of node %s, component %s timed out after %s (task %s is %s)", n.UUID, u.Component, f.d.cfg.FirmwareTimeout, monitor, task.State)
		}
		if err := f.d.sleep(ctx, f.d.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// simpleUpdateTarget finds the SimpleUpdate action of the UpdateService.
func simpleUpdateTarget(c *conn) (string, error) {
	var root struct{ UpdateService *link }
	if err := c.getJSON("/redfish/v1/", &root); err != nil {
		return "", err
	}
	if root.UpdateService == nil || root.UpdateService.ID == "" {
		return "", fmt.Errorf("the BMC has no UpdateService: %w", driver.ErrUnsupported)
	}
	var us struct {
		Actions struct {
			Simple *struct {
				Target string `json:"target"`
			} `json:"#UpdateService.SimpleUpdate"`
		} `json:"Actions"`
	}
	if err := c.getJSON(root.UpdateService.ID, &us); err != nil {
		return "", err
	}
	if us.Actions.Simple == nil || us.Actions.Simple.Target == "" {
		return "", fmt.Errorf("the attribute #UpdateService.SimpleUpdate is missing: %w", driver.ErrUnsupported)
	}
	return us.Actions.Simple.Target, nil
}

// Cache reads the BIOS and BMC firmware versions into t.Firmware (Ironic's
// cache_firmware_components).
func (f *Firmware) Cache(ctx context.Context, t *driver.Task) error {
	c, sysPath, err := f.d.target(ctx, t.Node)
	if err != nil {
		return err
	}
	var sys struct {
		BiosVersion string
		Links       struct{ ManagedBy []link }
	}
	if err := c.getJSON(sysPath, &sys); err != nil {
		return err
	}
	var comps []model.FirmwareComponent
	if sys.BiosVersion != "" {
		comps = append(comps, model.FirmwareComponent{Component: ComponentBIOS, CurrentVersion: sys.BiosVersion})
	}
	if len(sys.Links.ManagedBy) > 0 {
		var mgr struct{ FirmwareVersion string }
		if err := c.getJSON(sys.Links.ManagedBy[0].ID, &mgr); err == nil && mgr.FirmwareVersion != "" {
			comps = append(comps, model.FirmwareComponent{Component: ComponentBMC, CurrentVersion: mgr.FirmwareVersion})
		}
	}
	if len(comps) == 0 {
		return fmt.Errorf("Cannot retrieve firmware for node %s: no supported components: %w", t.Node.UUID, driver.ErrUnsupported)
	}
	t.Firmware = &comps
	return nil
}

func decodeBody(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
