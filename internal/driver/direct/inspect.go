package direct

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// InterfaceName names the agent's inspect and rescue interfaces.
const InterfaceName = "agent"

// driver_internal_info keys holding the inventory and the plugin data of
// the last inspection (served by GET /v1/nodes/{node}/inventory).
const (
	KeyInventory  = driver.KeyInventory
	KeyPluginData = driver.KeyPluginData
)

// Inspector is the "agent" inspect interface: it boots the node into the
// agent, which posts its inventory (IPA's format) to
// /v1/continue_inspection; ReceiveInventory then records the node's
// properties, appends the ports the node lacks, stores the inventory and
// plugin data and powers the node off.
type Inspector struct{ d *Direct }

// Inspector returns the agent inspect interface sharing d's configuration.
func (d *Direct) Inspector() *Inspector { return &Inspector{d: d} }

// Validate checks the node's boot interface can boot the agent.
func (i *Inspector) Validate(t *driver.Task) error { return i.d.validateBoot(t, false) }

// Inspect boots the agent and waits for it (inspect wait).
func (i *Inspector) Inspect(ctx context.Context, t *driver.Task) (driver.Result, error) {
	return driver.Wait, i.d.bootAgent(ctx, t, driver.RamdiskDeploy)
}

// CleanUpRamdisk undoes a failed, timed-out or aborted inspection
// (driver.RamdiskCleaner).
func (i *Inspector) CleanUpRamdisk(ctx context.Context, t *driver.Task, powerOff bool) error {
	return i.d.cleanUpRamdisk(ctx, t, powerOff)
}

// Continue would run on the agent's heartbeats in inspect wait; the
// conductor does not resume an inspection whose interface receives the
// inventory (the agent posts it itself), and were it called the node would
// keep waiting (until ReceiveInventory, or the inspect timeout).
func (i *Inspector) Continue(_ context.Context, _ *driver.Task, op string) (driver.Result, error) {
	if op != "inspect" {
		return driver.Done, fmt.Errorf("the agent inspect interface cannot %s", op)
	}
	return driver.Wait, nil
}

// ReceiveInventory applies an inventory the agent posted (POST
// /v1/continue_inspection) and keeps the rest of its data as plugin data.
func (i *Inspector) ReceiveInventory(ctx context.Context, t *driver.Task, inventory, pluginData map[string]any) error {
	if inventory == nil {
		return errors.New("no inventory was received")
	}
	if pluginData == nil {
		pluginData = map[string]any{}
	}
	if t.Node.DriverInternalInfo == nil {
		t.Node.DriverInternalInfo = model.JSON{}
	}
	t.Node.DriverInternalInfo[KeyPluginData] = pluginData
	return i.finish(ctx, t, inventory)
}

// finish applies the inventory, forgets the agent, powers the node off and
// withdraws the ramdisk.
func (i *Inspector) finish(ctx context.Context, t *driver.Task, inv map[string]any) error {
	if err := ApplyInventory(t, inv); err != nil {
		return err
	}
	return i.d.powerOff(ctx, t, " after inspection", driver.Boot.CleanUpRamdisk)
}

// inventory holds the fields of an agent inventory that set properties.
type inventory struct {
	CPU struct {
		Count        int    `json:"count"`
		Architecture string `json:"architecture"`
	} `json:"cpu"`
	Memory struct {
		PhysicalMB int64 `json:"physical_mb"`
		Total      int64 `json:"total"`
	} `json:"memory"`
	Disks []struct {
		Size int64 `json:"size"`
	} `json:"disks"`
	Interfaces []struct {
		MACAddress string `json:"mac_address"`
	} `json:"interfaces"`
}

const gib = 1 << 30

// ApplyInventory sets the node's properties from an agent inventory (cpus,
// cpu_arch, memory_mb, and local_gb: the largest disk in GiB less one, as
// Ironic leaves for partitioning), stores the inventory and appends a port
// (empty UUID, for the conductor to create) for each MAC the node lacks.
func ApplyInventory(t *driver.Task, raw map[string]any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	var inv inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return fmt.Errorf("malformed inventory: %w", err)
	}
	n := t.Node
	if n.Properties == nil {
		n.Properties = model.JSON{}
	}
	if inv.CPU.Count > 0 {
		n.Properties["cpus"] = inv.CPU.Count
	}
	if inv.CPU.Architecture != "" {
		n.Properties["cpu_arch"] = inv.CPU.Architecture
	}
	mem := inv.Memory.PhysicalMB
	if mem == 0 {
		mem = inv.Memory.Total / (1 << 20)
	}
	if mem > 0 {
		n.Properties["memory_mb"] = mem
	}
	var largest int64
	for _, d := range inv.Disks {
		largest = max(largest, d.Size)
	}
	if gb := largest/gib - 1; gb > 0 {
		n.Properties["local_gb"] = gb
	}
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSON{}
	}
	n.DriverInternalInfo[KeyInventory] = raw
	have := map[string]bool{}
	for _, p := range t.Ports {
		have[strings.ToLower(p.Address)] = true
	}
	for _, nic := range inv.Interfaces {
		mac := strings.ToLower(strings.TrimSpace(nic.MACAddress))
		if mac == "" || mac == "00:00:00:00:00:00" || have[mac] {
			continue
		}
		have[mac] = true
		t.Ports = append(t.Ports, &model.Port{Address: mac, NodeUUID: n.UUID, PXEEnabled: true})
	}
	return nil
}
