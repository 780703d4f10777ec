package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/raid"
)

// RAID is the redfish RAID interface (Ironic's RedfishRAID): logical disks
// as Volumes of the system's Storage controllers.
//
// create_configuration (clean and service step; apply_configuration as a
// deploy step) matches the node's target_raid_config to the drives of the
// RAID-capable controllers (raid.Plan, Ironic's disk selection; drives
// already in a volume are skipped), POSTs one Volume per logical disk
// ({"RAIDType", "CapacityBytes", "Links": {"Drives"}}, with
// "@Redfish.OperationApplyTime": "Immediate" when the collection offers it),
// and records what the controllers then hold in raid_config
// (update_raid_config). delete_configuration (clean, deploy and service
// step) DELETEs every volume with a RAIDType. A 202 answer is followed to
// its task monitor until it ends (sushy's blocking call, at most
// raidTaskTimeout). A controller that applies volume changes only on reset
// (OperationApplyTime OnReset without Immediate, as many real ones) gets
// its changes with OnReset; the BMC holds them behind task monitors, the
// node is rebooted (Ironic's reboot_to_finish_step; power left as found),
// and the step waits for every task to complete (Ironic's periodic RAID
// task check: Completed with an OK or Warning status, else the step fails
// with the task's messages). With delete_existing on such a controller the
// deletes are applied by a reboot of their own before the creates are sent.
//
// Unlike Ironic 21.4, whose redfish create_configuration ignores it,
// delete_existing=true deletes the existing volumes first.
type RAID struct {
	d   *Driver
	now func() time.Time
}

// NewRAID returns the redfish RAID interface over d's connections.
func (d *Driver) NewRAID() *RAID { return &RAID{d: d, now: time.Now} }

// raidTaskTimeout bounds the wait for a volume task (sushy's default
// timeout of a blocking call).
const raidTaskTimeout = 500 * time.Second

var (
	_ driver.RAID    = (*RAID)(nil)
	_ driver.Stepper = (*RAID)(nil)
)

// Validate checks the target RAID configuration, when set (Ironic's
// RedfishRAID keeps the base validation: driver_info is the power and
// management interfaces' to check).
func (r *RAID) Validate(t *driver.Task) error {
	n := t.Node
	if len(n.TargetRaidConfig) == 0 {
		return nil
	}
	return r.ValidateRAIDConfig(n, n.TargetRaidConfig)
}

// ValidateRAIDConfig is Ironic's schema check, and Redfish RAID takes no
// scsi drives.
func (r *RAID) ValidateRAIDConfig(_ *model.Node, cfg model.JSON) error {
	if err := raid.Validate(cfg); err != nil {
		return err
	}
	for _, ld := range cfg["logical_disks"].([]any) {
		if ld.(map[string]any)["interface_type"] == "scsi" {
			return &raid.Error{Msg: "interface type `scsi` not supported by Redfish RAID"}
		}
	}
	return nil
}

// LogicalDiskProperties are the schema's.
func (r *RAID) LogicalDiskProperties() map[string]string { return raid.LogicalDiskProperties() }

// Steps offers Ironic's redfish RAID steps, all manual (priority 0).
func (r *RAID) Steps(_ *model.Node, iface string, kind driver.StepKind) []driver.Step {
	step := func(name string) driver.Step { return driver.Step{Interface: iface, Step: name} }
	switch kind {
	case driver.CleanSteps, driver.ServiceSteps:
		return []driver.Step{step("create_configuration"), step("delete_configuration")}
	case driver.DeploySteps:
		return []driver.Step{step("apply_configuration"), step("delete_configuration")}
	}
	return nil
}

// ExecuteStep runs a RAID step against the BMC; it is done when it returns.
func (r *RAID) ExecuteStep(ctx context.Context, t *driver.Task, kind driver.StepKind, s driver.Step) (driver.Result, error) {
	switch s.Step {
	case "create_configuration":
		root, err1 := raid.BoolArg(s.Args, "create_root_volume", true)
		nonRoot, err2 := raid.BoolArg(s.Args, "create_nonroot_volumes", true)
		del, err3 := raid.BoolArg(s.Args, "delete_existing", false)
		if err := errors.Join(err1, err2, err3); err != nil {
			return driver.Done, err
		}
		return driver.Done, r.create(ctx, t, root, nonRoot, del)
	case "apply_configuration":
		cfg, ok := s.Args["raid_config"].(map[string]any)
		if !ok {
			return driver.Done, fmt.Errorf("apply_configuration needs the argument raid_config (an object)")
		}
		if err := r.ValidateRAIDConfig(t.Node, cfg); err != nil {
			return driver.Done, err
		}
		root, err1 := raid.BoolArg(s.Args, "create_root_volume", true)
		nonRoot, err2 := raid.BoolArg(s.Args, "create_nonroot_volumes", false)
		del, err3 := raid.BoolArg(s.Args, "delete_existing", false)
		if err := errors.Join(err1, err2, err3); err != nil {
			return driver.Done, err
		}
		t.Node.TargetRaidConfig = cfg
		return driver.Done, r.create(ctx, t, root, nonRoot, del)
	case "delete_configuration":
		return driver.Done, r.delete(ctx, t)
	}
	return driver.Done, fmt.Errorf("redfish RAID has no %s step %s", kind, s.Step)
}

// rfStorage is what the RAID interface reads of a Storage resource.
type rfStorage struct {
	ID                 string `json:"Id"`
	Path               string `json:"@odata.id"`
	StorageControllers []struct {
		SupportedRAIDTypes []string
	}
	Drives  []link
	Volumes link

	drives  []raid.Drive
	volumes []rfVolume
	applyAt []string // OperationApplyTimeSupport of its Volumes
}

// raidCapable is Ironic's test: a storage whose first controller lists no
// RAID types is passed over.
func (s *rfStorage) raidCapable() bool {
	return len(s.StorageControllers) == 0 || len(s.StorageControllers[0].SupportedRAIDTypes) > 0
}

type rfVolume struct {
	ID            string `json:"Id"`
	Path          string `json:"@odata.id"`
	Name          string
	CapacityBytes int64
	RAIDType      string
	Links         struct{ Drives []link }
}

// storages reads every Storage of the system with its drives and volumes.
func storages(c *conn, sysPath string) ([]*rfStorage, error) {
	var sys struct{ Storage link }
	if err := c.getJSON(sysPath, &sys); err != nil {
		return nil, err
	}
	if sys.Storage.ID == "" {
		return nil, fmt.Errorf("Redfish system %s has no Storage", sysPath)
	}
	var col struct{ Members []link }
	if err := c.getJSON(sys.Storage.ID, &col); err != nil {
		return nil, err
	}
	var out []*rfStorage
	for _, m := range col.Members {
		s := &rfStorage{}
		if err := c.getJSON(m.ID, s); err != nil {
			return nil, err
		}
		for _, dl := range s.Drives {
			var d struct {
				ID            string `json:"Id"`
				CapacityBytes int64
				MediaType     string
				Protocol      string
			}
			if err := c.getJSON(dl.ID, &d); err != nil {
				return nil, err
			}
			s.drives = append(s.drives, raid.Drive{ID: d.ID, Path: dl.ID, Storage: s.ID, CapacityBytes: d.CapacityBytes,
				MediaType: d.MediaType, Protocol: d.Protocol})
		}
		if s.Volumes.ID != "" {
			var vc struct {
				Members []link
				Support struct{ SupportedValues []string } `json:"@Redfish.OperationApplyTimeSupport"`
			}
			if err := c.getJSON(s.Volumes.ID, &vc); err != nil {
				return nil, err
			}
			s.applyAt = vc.Support.SupportedValues
			for _, vl := range vc.Members {
				var v rfVolume
				if err := c.getJSON(vl.ID, &v); err != nil {
					return nil, err
				}
				if v.Path == "" {
					v.Path = vl.ID
				}
				s.volumes = append(s.volumes, v)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// applyTime is the OperationApplyTime to request: Immediate when offered,
// else OnReset when offered (Ironic's choice), none when nothing is
// advertised.
func (s *rfStorage) applyTime() string {
	for _, at := range []string{"Immediate", "OnReset"} {
		if slices.Contains(s.applyAt, at) {
			return at
		}
	}
	return ""
}

func (r *RAID) create(ctx context.Context, t *driver.Task, root, nonRoot, deleteExisting bool) error {
	n := t.Node
	cfg, err := raid.Filter(n, true, true)
	if err != nil {
		return err
	}
	c, sysPath, err := r.d.target(ctx, n)
	if err != nil {
		return err
	}
	all, err := storages(c, sysPath)
	if err != nil {
		return err
	}
	var drives []raid.Drive
	inUse := map[string]bool{}
	byDrive := map[string]*rfStorage{}
	for _, s := range all {
		if !s.raidCapable() {
			continue
		}
		drives = append(drives, s.drives...)
		for _, d := range s.drives {
			byDrive[d.ID] = s
		}
		for _, v := range s.volumes {
			for _, dl := range v.Links.Drives {
				for _, d := range s.drives {
					if d.Path == dl.ID && !deleteExisting {
						inUse[d.ID] = true
					}
				}
			}
		}
	}
	// Plan before deleting anything: a configuration the drives cannot
	// hold leaves the BMC as it was.
	vols, err := raid.Plan(n.UUID, cfg, drives, inUse, root, nonRoot)
	if err != nil {
		return err
	}
	if deleteExisting {
		var held []string
		if err := r.deleteVolumes(ctx, c, n, all, &held); err != nil {
			return err
		}
		if err := r.applyHeld(ctx, t, c, held); err != nil {
			return err
		}
	}
	var held []string
	for _, v := range vols {
		if err := r.createVolume(ctx, c, n, byDrive, drives, v, &held); err != nil {
			return err
		}
	}
	if err := r.applyHeld(ctx, t, c, held); err != nil {
		return err
	}
	return r.record(c, sysPath, n)
}

// applyHeld reboots the node so that the BMC applies the volume changes it
// holds until reset, then waits for their tasks (nothing when none is held).
func (r *RAID) applyHeld(ctx context.Context, t *driver.Task, c *conn, monitors []string) error {
	if len(monitors) == 0 {
		return nil
	}
	if err := r.d.rebootToApply(ctx, t, "its RAID configuration"); err != nil {
		return err
	}
	for _, m := range monitors {
		if err := r.wait(ctx, c, m); err != nil {
			return fmt.Errorf("Redfish RAID configuration failed for node %s: %w", t.Node.UUID, err)
		}
	}
	return nil
}

// createVolume POSTs one volume to the storage holding its first drive
// (Ironic's _get_storage_controller); a create the BMC holds until reset
// adds its task monitor to held.
func (r *RAID) createVolume(ctx context.Context, c *conn, n *model.Node, byDrive map[string]*rfStorage, drives []raid.Drive, v raid.Volume, held *[]string) error {
	s := byDrive[v.Drives[0]]
	if s == nil || s.Volumes.ID == "" {
		return fmt.Errorf("No storage controller found for node %s", n.UUID)
	}
	at := s.applyTime()
	level, _ := raid.LevelInfo(v.RAIDLevel)
	var links []link
	for _, id := range v.Drives {
		for _, d := range drives {
			if d.ID == id {
				links = append(links, link{ID: d.Path})
			}
		}
	}
	payload := map[string]any{"RAIDType": level.RedfishType, "CapacityBytes": v.SizeBytes, "Links": map[string]any{"Drives": links}}
	if at != "" {
		payload["@Redfish.OperationApplyTime"] = at
	}
	resp, err := c.Post(s.Volumes.ID, payload)
	if err != nil {
		return fmt.Errorf("Redfish driver failed to create virtual disk for node %s. Reason: %w.", n.UUID, err)
	}
	return r.finish(ctx, c, resp, at, held)
}

func (r *RAID) delete(ctx context.Context, t *driver.Task) error {
	n := t.Node
	c, sysPath, err := r.d.target(ctx, n)
	if err != nil {
		return err
	}
	all, err := storages(c, sysPath)
	if err != nil {
		return fmt.Errorf("Cannot get the list of volumes to delete for node %s. Reason: %w.", n.UUID, err)
	}
	var held []string
	if err := r.deleteVolumes(ctx, c, n, all, &held); err != nil {
		return err
	}
	if err := r.applyHeld(ctx, t, c, held); err != nil {
		return err
	}
	return r.record(c, sysPath, n)
}

// deleteVolumes deletes every volume with a RAID type, on every storage
// (Ironic's _submit_delete_configuration).
func (r *RAID) deleteVolumes(ctx context.Context, c *conn, n *model.Node, all []*rfStorage, held *[]string) error {
	for _, s := range all {
		for _, v := range s.volumes {
			if v.RAIDType == "" {
				continue
			}
			at := s.applyTime()
			var body []byte
			if at != "" {
				body, _ = json.Marshal(map[string]string{"@Redfish.OperationApplyTime": at})
			}
			resp, err := c.do(http.MethodDelete, v.Path, body, "application/json", nil)
			if err != nil {
				return fmt.Errorf("Redfish driver failed to delete volume %s of node %s: %w", v.ID, n.UUID, err)
			}
			if err := r.finish(ctx, c, resp, at, held); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish follows a 202 answer's task monitor (Location) until the task
// ends, as sushy's blocking call; any other 2xx is done. A change requested
// OnReset is not waited for: its monitor is added to held.
func (r *RAID) finish(ctx context.Context, c *conn, resp *http.Response, at string, held *[]string) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return nil
	}
	monitor := resp.Header.Get("Location")
	if monitor == "" {
		return fmt.Errorf("Redfish answered 202 to %s without a Location header", resp.Request.URL.Path)
	}
	if at == "OnReset" {
		*held = append(*held, monitor)
		return nil
	}
	return r.wait(ctx, c, monitor)
}

// wait polls a task monitor until the task ends (at most raidTaskTimeout);
// a Task that ended other than Completed with an OK or Warning status is
// the error, with its messages.
func (r *RAID) wait(ctx context.Context, c *conn, monitor string) error {
	deadline := time.Now().Add(raidTaskTimeout)
	for {
		if err := r.d.sleep(ctx, r.d.cfg.PollInterval); err != nil {
			return err
		}
		m, err := c.Get(monitor)
		if err != nil {
			return fmt.Errorf("Redfish task %s failed: %w", monitor, err)
		}
		body, _ := io.ReadAll(io.LimitReader(m.Body, 1<<20))
		m.Body.Close()
		if m.StatusCode != http.StatusAccepted {
			return taskOutcome(monitor, body)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Redfish task %s did not end within %s", monitor, raidTaskTimeout)
		}
	}
}

// record reads the volumes back into raid_config (Ironic's update_raid_config).
func (r *RAID) record(c *conn, sysPath string, n *model.Node) error {
	all, err := storages(c, sysPath)
	if err != nil {
		return err
	}
	lds := []map[string]any{}
	for _, s := range all {
		for _, v := range s.volumes {
			level := raid.LevelOfRedfishType(v.RAIDType)
			if level == "" {
				continue
			}
			lds = append(lds, map[string]any{"id": v.ID, "name": v.Name, "controller": s.ID,
				"size_gb": v.CapacityBytes / (1 << 30), "raid_level": level})
		}
	}
	return raid.Apply(n, lds, r.now())
}

// taskOutcome reads a finished task monitor's body: a Task that did not
// complete well is an error with its messages; any other body is success.
func taskOutcome(monitor string, body []byte) error {
	var task struct {
		TaskState, TaskStatus string
		Messages              []struct{ Message string }
	}
	if json.Unmarshal(body, &task) != nil || task.TaskState == "" {
		return nil
	}
	if task.TaskState == "Completed" && (task.TaskStatus == "" || task.TaskStatus == "OK" || task.TaskStatus == "Warning") {
		return nil
	}
	var msgs []string
	for _, m := range task.Messages {
		if m.Message != "" {
			msgs = append(msgs, m.Message)
		}
	}
	return fmt.Errorf("task %s ended %s (%s): %s", monitor, task.TaskState, task.TaskStatus, strings.Join(msgs, "; "))
}
