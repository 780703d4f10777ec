package bmcemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// A machine's Redfish Storage: one RAID controller (StorageID) holding a
// drive per Hardware.DisksBytes entry (Disk.1, Disk.2, ...: SSD, SATA) and
// the volumes created on them. POST to its Volumes collection creates a
// volume at once (201, as sushy's synchronous answer): RAIDType must be one
// of the controller's SupportedRAIDTypes, Links.Drives must name free drives
// of this controller in a number the RAID type allows, and CapacityBytes
// must fit (0 or absent: the largest that fits). DELETE of a volume frees
// its drives. The volumes collection advertises OperationApplyTime
// Immediate, which Ironic sends and this emulator honours by answering
// synchronously. With Knobs.RAIDOnReset the collection offers OnReset alone
// and creates and deletes are held, behind a task, until the next boot.

// StorageID is the Id of every machine's RAID controller's Storage resource.
const StorageID = "RAID.Integrated.1-1"

// SupportedRAIDTypes are what the emulated controller offers.
var supportedRAIDTypes = []string{"RAID0", "RAID1", "RAID5", "RAID6", "RAID10"}

// Volume is a logical disk on a machine's emulated RAID controller.
type Volume struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	RAIDType      string   `json:"raid_type"`
	CapacityBytes int64    `json:"capacity_bytes"`
	Drives        []string `json:"drives"` // drive Ids
}

// storageState is a machine's volumes, under its own mutex.
type storageState struct {
	mu      sync.Mutex
	volumes []Volume
	next    int
	pending []pendingVolume // changes held until the next boot (Knobs.RAIDOnReset)
}

// pendingVolume is a volume create (create set) or delete (deleteID set)
// waiting for the next boot, and its task.
type pendingVolume struct {
	create   *Volume
	deleteID string
	task     string
}

// onReset reports whether the machine's controller applies volume changes
// only at the next reset.
func (m *Machine) onReset() bool { return m.Knobs().RAIDOnReset }

// applyTimes are the OperationApplyTime values the Volumes collection offers.
func (m *Machine) applyTimes() []string {
	if m.onReset() {
		return []string{"OnReset"}
	}
	return []string{"Immediate"}
}

// holdVolumeChange queues a change for the next boot and answers 202 with
// its task monitor.
func (m *Machine) holdVolumeChange(w http.ResponseWriter, p pendingVolume, what string) {
	t := m.emu.updates.addTask(m, volumeTask, what+" at the next reset")
	p.task = t.ID
	m.storage.pending = append(m.storage.pending, p)
	w.Header().Set("Location", rfMonitors+"/"+t.ID)
	writeJSON(w, http.StatusAccepted, taskJSON(&t))
}

// applyPendingVolumes makes the held volume changes at boot, in order, and
// ends their tasks.
func (m *Machine) applyPendingVolumes() {
	m.storage.mu.Lock()
	pending := m.storage.pending
	m.storage.pending = nil
	var ended []pendingVolume
	var failed []string
	for _, p := range pending {
		switch {
		case p.create != nil:
			m.storage.volumes = append(m.storage.volumes, *p.create)
			ended, failed = append(ended, p), append(failed, "")
		default:
			i := slices.IndexFunc(m.storage.volumes, func(v Volume) bool { return v.ID == p.deleteID })
			msg := ""
			if i < 0 {
				msg = "The volume " + p.deleteID + " no longer exists."
			} else {
				m.storage.volumes = slices.Delete(m.storage.volumes, i, i+1)
			}
			ended, failed = append(ended, p), append(failed, msg)
		}
	}
	m.storage.mu.Unlock()
	for i, p := range ended {
		if failed[i] != "" {
			m.emu.updates.endTask(p.task, TaskException, failed[i])
		} else {
			m.emu.updates.endTask(p.task, TaskCompleted, "The volume change was applied.")
		}
	}
}

// Volumes returns the volumes now on the machine's RAID controller.
func (m *Machine) Volumes() []Volume {
	m.storage.mu.Lock()
	defer m.storage.mu.Unlock()
	out := make([]Volume, len(m.storage.volumes))
	for i, v := range m.storage.volumes {
		v.Drives = slices.Clone(v.Drives)
		out[i] = v
	}
	return out
}

// driveID names the i-th drive (from 0).
func driveID(i int) string { return fmt.Sprintf("Disk.%d", i+1) }

func (h redfishAPI) serveStorage(w http.ResponseWriter, r *http.Request, m *Machine, base string, sub []string) {
	ctrl := base + "/" + StorageID
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, collection("#StorageCollection.StorageCollection", "Storage Collection", base,
			[]any{odataID(ctrl)}))
	case len(sub) == 1 && sub[0] == StorageID && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, storageJSON(m, ctrl))
	case len(sub) == 3 && sub[0] == StorageID && sub[1] == "Drives" && r.Method == http.MethodGet:
		for i, b := range m.HW.DisksBytes {
			if driveID(i) == sub[2] {
				writeJSON(w, http.StatusOK, driveJSON(ctrl, i, b))
				return
			}
		}
		notFound(w, r)
	case len(sub) == 2 && sub[0] == StorageID && sub[1] == "Volumes":
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, volumesJSON(m, ctrl))
		case http.MethodPost:
			m.createVolume(w, r, ctrl)
		default:
			methodNotAllowed(w)
		}
	case len(sub) == 3 && sub[0] == StorageID && sub[1] == "Volumes":
		switch r.Method {
		case http.MethodGet:
			v, ok := m.volume(sub[2])
			if !ok {
				notFound(w, r)
				return
			}
			writeJSON(w, http.StatusOK, volumeJSON(ctrl, v))
		case http.MethodDelete:
			if m.onReset() && m.emu != nil {
				if _, ok := m.volume(sub[2]); !ok {
					notFound(w, r)
					return
				}
				m.storage.mu.Lock()
				m.holdVolumeChange(w, pendingVolume{deleteID: sub[2]}, "Deleting volume "+sub[2])
				m.storage.mu.Unlock()
				return
			}
			if !m.deleteVolume(sub[2]) {
				notFound(w, r)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w)
		}
	default:
		notFound(w, r)
	}
}

func storageJSON(m *Machine, ctrl string) map[string]any {
	drives := []any{}
	for i := range m.HW.DisksBytes {
		drives = append(drives, odataID(ctrl+"/Drives/"+driveID(i)))
	}
	return map[string]any{
		"@odata.type": "#Storage.v1_9_0.Storage", "@odata.id": ctrl, "Id": StorageID,
		"Name": "RAID Controller", "Status": enabledOK,
		"StorageControllers": []any{map[string]any{
			"@odata.id": ctrl + "#/StorageControllers/0", "MemberId": "0", "Name": "Emulated RAID Controller",
			"Status": enabledOK, "SupportedRAIDTypes": supportedRAIDTypes,
			"SupportedControllerProtocols": []string{"PCIe"}, "SupportedDeviceProtocols": []string{"SATA"},
		}},
		"Drives": drives, "Drives@odata.count": len(drives),
		"Volumes": odataID(ctrl + "/Volumes"),
	}
}

func driveJSON(ctrl string, i int, size int64) map[string]any {
	return map[string]any{
		"@odata.type": "#Drive.v1_9_0.Drive", "@odata.id": ctrl + "/Drives/" + driveID(i), "Id": driveID(i),
		"Name": fmt.Sprintf("Solid State Disk %d", i+1), "Manufacturer": "Anvil", "Model": "Emulated Disk",
		"CapacityBytes": size, "MediaType": "SSD", "Protocol": "SATA", "Status": enabledOK,
	}
}

func volumesJSON(m *Machine, ctrl string) map[string]any {
	members := []any{}
	for _, v := range m.Volumes() {
		members = append(members, odataID(ctrl+"/Volumes/"+v.ID))
	}
	c := collection("#VolumeCollection.VolumeCollection", "Volume Collection", ctrl+"/Volumes", members)
	c["@Redfish.OperationApplyTimeSupport"] = map[string]any{
		"@odata.type": "#Settings.v1_3_3.OperationApplyTimeSupport", "SupportedValues": m.applyTimes()}
	return c
}

func volumeJSON(ctrl string, v Volume) map[string]any {
	drives := []any{}
	for _, d := range v.Drives {
		drives = append(drives, odataID(ctrl+"/Drives/"+d))
	}
	return map[string]any{
		"@odata.type": "#Volume.v1_6_0.Volume", "@odata.id": ctrl + "/Volumes/" + v.ID, "Id": v.ID, "Name": v.Name,
		"RAIDType": v.RAIDType, "VolumeType": volumeType(v.RAIDType), "CapacityBytes": v.CapacityBytes,
		"Encrypted": false, "BlockSizeBytes": 512, "Status": enabledOK,
		"Links": map[string]any{"Drives": drives, "Drives@odata.count": len(drives)},
	}
}

// volumeType is the (deprecated) Redfish VolumeType of a RAID type.
func volumeType(raidType string) string {
	switch raidType {
	case "RAID0":
		return "NonRedundant"
	case "RAID1":
		return "Mirrored"
	case "RAID10":
		return "SpannedMirrors"
	}
	return "StripedWithParity"
}

// raidGeometry says whether n drives suit a RAID type and how many of them
// hold data.
func raidGeometry(raidType string, n int) (data int, ok bool) {
	switch raidType {
	case "RAID0":
		return n, n >= 1
	case "RAID1":
		return 1, n == 2
	case "RAID5":
		return n - 1, n >= 3
	case "RAID6":
		return n - 2, n >= 4
	case "RAID10":
		return n / 2, n >= 4 && n%2 == 0
	}
	return 0, false
}

func (m *Machine) volume(id string) (Volume, bool) {
	for _, v := range m.Volumes() {
		if v.ID == id {
			return v, true
		}
	}
	return Volume{}, false
}

func (m *Machine) deleteVolume(id string) bool {
	m.storage.mu.Lock()
	defer m.storage.mu.Unlock()
	i := slices.IndexFunc(m.storage.volumes, func(v Volume) bool { return v.ID == id })
	if i < 0 {
		return false
	}
	m.storage.volumes = slices.Delete(m.storage.volumes, i, i+1)
	return true
}

// createVolume checks a POST to the Volumes collection and creates the volume.
func (m *Machine) createVolume(w http.ResponseWriter, r *http.Request, ctrl string) {
	var body struct {
		Name          string
		RAIDType      string
		VolumeType    string
		CapacityBytes *int64
		Links         struct {
			Drives []struct {
				ID string `json:"@odata.id"`
			}
		}
		ApplyTime string `json:"@Redfish.OperationApplyTime"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		malformedJSON(w)
		return
	}
	bad := func(code, msg string) { rfError(w, http.StatusBadRequest, code, msg) }
	if body.ApplyTime != "" && !slices.Contains(m.applyTimes(), body.ApplyTime) {
		bad("Base.1.8.PropertyValueNotInList", fmt.Sprintf("The value '%s' for the property @Redfish.OperationApplyTime is not in the list of acceptable values.", body.ApplyTime))
		return
	}
	if body.RAIDType == "" {
		bad("Base.1.8.PropertyMissing", "The property RAIDType is a required property and must be included in the request.")
		return
	}
	if !slices.Contains(supportedRAIDTypes, body.RAIDType) {
		bad("Base.1.8.PropertyValueNotInList", fmt.Sprintf("The value '%s' for the property RAIDType is not in the list of acceptable values.", body.RAIDType))
		return
	}
	m.storage.mu.Lock()
	defer m.storage.mu.Unlock()
	used := map[string]bool{}
	for _, v := range m.storage.volumes {
		for _, d := range v.Drives {
			used[d] = true
		}
	}
	for _, p := range m.storage.pending { // drives a held create will take
		if p.create != nil {
			for _, d := range p.create.Drives {
				used[d] = true
			}
		}
	}
	var ids []string
	var smallest int64
	for _, l := range body.Links.Drives {
		id, ok := strings.CutPrefix(l.ID, ctrl+"/Drives/")
		i := -1
		for j := range m.HW.DisksBytes {
			if driveID(j) == id {
				i = j
			}
		}
		if !ok || i < 0 || slices.Contains(ids, id) {
			bad("Base.1.8.PropertyValueIncorrect", fmt.Sprintf("The drive %s is not a drive of this controller.", l.ID))
			return
		}
		if used[id] {
			bad("Base.1.8.ResourceInUse", fmt.Sprintf("The drive %s is already part of a volume.", l.ID))
			return
		}
		if size := m.HW.DisksBytes[i]; smallest == 0 || size < smallest {
			smallest = size
		}
		ids = append(ids, id)
	}
	data, ok := raidGeometry(body.RAIDType, len(ids))
	if !ok {
		bad("Base.1.8.PropertyValueIncorrect", fmt.Sprintf("%s cannot be built from %d drives.", body.RAIDType, len(ids)))
		return
	}
	maxBytes := smallest * int64(data)
	size := maxBytes
	if body.CapacityBytes != nil && *body.CapacityBytes > 0 {
		size = *body.CapacityBytes
	}
	if size > maxBytes {
		bad("Base.1.8.PropertyValueIncorrect", fmt.Sprintf("CapacityBytes %d exceeds the %d bytes the drives hold as %s.", size, maxBytes, body.RAIDType))
		return
	}
	m.storage.next++
	v := Volume{ID: fmt.Sprintf("Volume.%d", m.storage.next), Name: body.Name, RAIDType: body.RAIDType, CapacityBytes: size, Drives: ids}
	if v.Name == "" {
		v.Name = "Virtual Disk " + fmt.Sprint(m.storage.next)
	}
	if m.onReset() && m.emu != nil {
		m.holdVolumeChange(w, pendingVolume{create: &v}, "Creating volume "+v.ID)
		return
	}
	m.storage.volumes = append(m.storage.volumes, v)
	w.Header().Set("Location", ctrl+"/Volumes/"+v.ID)
	writeJSON(w, http.StatusCreated, volumeJSON(ctrl, v))
}
