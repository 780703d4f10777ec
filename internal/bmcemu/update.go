package bmcemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Firmware components of an emulated machine, in Ironic's words.
const (
	FirmwareBIOS = "bios"
	FirmwareBMC  = "bmc"
)

// Initial firmware versions of every emulated machine.
const (
	initialBIOSVersion = "1.0.0"
	initialBMCVersion  = "1.0.0"
)

// firmwareState is a machine's firmware versions and the updates applied.
type firmwareState struct {
	mu      sync.Mutex
	bios    string // "" until first used: initialBIOSVersion
	bmc     string
	flashed []string // images applied, in order (URLs)
}

// Firmware returns the machine's firmware versions by component ("bios",
// "bmc").
func (m *Machine) Firmware() map[string]string {
	m.fw.mu.Lock()
	defer m.fw.mu.Unlock()
	m.fw.initLocked()
	return map[string]string{FirmwareBIOS: m.fw.bios, FirmwareBMC: m.fw.bmc}
}

func (f *firmwareState) initLocked() {
	if f.bios == "" {
		f.bios = initialBIOSVersion
	}
	if f.bmc == "" {
		f.bmc = initialBMCVersion
	}
}

func (m *Machine) firmwareVersion(component string) string { return m.Firmware()[component] }

// flash sets component to version ("" bumps the minor number, as
// sushy-tools does) and returns the new version.
func (m *Machine) flash(component, version, image string) string {
	m.fw.mu.Lock()
	defer m.fw.mu.Unlock()
	m.fw.initLocked()
	v := &m.fw.bios
	if component == FirmwareBMC {
		v = &m.fw.bmc
	}
	if version == "" {
		version = bumpMinor(*v)
	}
	*v = version
	m.fw.flashed = append(m.fw.flashed, image)
	return version
}

func bumpMinor(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return v + ".1"
	}
	n, _ := strconv.Atoi(parts[1])
	parts[1] = strconv.Itoa(n + 1)
	return strings.Join(parts, ".")
}

// updateService holds the UpdateService's tasks.
type updateService struct {
	mu     sync.Mutex
	tasks  map[string]*updateTask
	nextID int
	wg     sync.WaitGroup // running updates
}

// updateTask is one Task resource: a SimpleUpdate's, or a volume change
// held until the next reset.
type updateTask struct {
	ID, Name, State, Status, Message string
	Start, End                       time.Time
	machine                          string
}

// Task names.
const (
	firmwareTask = "Firmware update"
	volumeTask   = "Volume change"
)

// addTask registers a running task for machine m and returns a copy of it.
func (u *updateService) addTask(m *Machine, name, message string) updateTask {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tasks == nil {
		u.tasks = map[string]*updateTask{}
	}
	u.nextID++
	t := &updateTask{ID: strconv.Itoa(u.nextID), Name: name, State: TaskRunning, Status: "OK",
		Start: time.Now().UTC(), machine: m.ID, Message: message}
	u.tasks[t.ID] = t
	return *t
}

// endTask ends a task: Completed, or Exception with a Critical status.
func (u *updateService) endTask(id, state, msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.tasks[id]
	if t == nil {
		return
	}
	t.State, t.Message, t.End = state, msg, time.Now().UTC()
	if state != TaskCompleted {
		t.Status = "Critical"
	}
}

// Task states (Redfish TaskState) an update goes through.
const (
	TaskRunning   = "Running"
	TaskCompleted = "Completed"
	TaskException = "Exception"
)

const (
	rfUpdate   = rfRoot + "/UpdateService"
	rfTasks    = rfRoot + "/TaskService/Tasks"
	rfMonitors = rfRoot + "/TaskService/TaskMonitors"
)

// UpdateTasks returns the states of the update tasks taken for machine id,
// oldest first (what a test reads back).
func (e *Emulator) UpdateTasks(id string) []string {
	e.updates.mu.Lock()
	defer e.updates.mu.Unlock()
	var out []string
	for i := 1; i <= e.updates.nextID; i++ {
		if t := e.updates.tasks[strconv.Itoa(i)]; t != nil && t.machine == id && t.Name == firmwareTask {
			out = append(out, t.State)
		}
	}
	return out
}

// serveUpdateService serves UpdateService, its FirmwareInventory (each
// machine's BIOS and BMC the credentials open) and SimpleUpdate.
func (h redfishAPI) serveUpdateService(w http.ResponseWriter, r *http.Request, c creds, sub []string) {
	e := h.e
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#UpdateService.v1_11_0.UpdateService", "@odata.id": rfUpdate, "Id": "UpdateService",
			"Name": "Update Service", "ServiceEnabled": true, "Status": enabledOK,
			"FirmwareInventory": odataID(rfUpdate + "/FirmwareInventory"),
			"Actions": map[string]any{"#UpdateService.SimpleUpdate": map[string]any{
				"target": rfUpdate + "/Actions/UpdateService.SimpleUpdate",
				"TransferProtocol@Redfish.AllowableValues": []string{"HTTP"},
			}},
		})
	case len(sub) == 1 && sub[0] == "FirmwareInventory" && r.Method == http.MethodGet:
		var members []any
		for _, m := range e.machines {
			if m.checkAuth(c.user, c.password) {
				members = append(members, odataID(inventoryItem(m.ID, FirmwareBIOS)), odataID(inventoryItem(m.ID, FirmwareBMC)))
			}
		}
		writeJSON(w, http.StatusOK, collection("#SoftwareInventoryCollection.SoftwareInventoryCollection",
			"Firmware Inventory Collection", rfUpdate+"/FirmwareInventory", members))
	case len(sub) == 2 && sub[0] == "FirmwareInventory" && r.Method == http.MethodGet:
		id, comp, _ := strings.Cut(sub[1], "-")
		if i := strings.LastIndex(sub[1], "-"); i > 0 {
			id, comp = sub[1][:i], sub[1][i+1:]
		}
		m := e.byID[id]
		if m == nil || !m.checkAuth(c.user, c.password) || (comp != "BIOS" && comp != "BMC") {
			notFound(w, r)
			return
		}
		component := strings.ToLower(comp)
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#SoftwareInventory.v1_4_0.SoftwareInventory", "@odata.id": inventoryItem(m.ID, component),
			"Id": m.ID + "-" + comp, "Name": comp + " firmware of " + m.ID, "Version": m.firmwareVersion(component),
			"Updateable": true, "Status": enabledOK,
		})
	case len(sub) == 2 && sub[0] == "Actions" && sub[1] == "UpdateService.SimpleUpdate" && r.Method == http.MethodPost:
		h.simpleUpdate(w, r, c)
	case len(sub) <= 2:
		methodNotAllowed(w)
	default:
		notFound(w, r)
	}
}

func inventoryItem(id, component string) string {
	return rfUpdate + "/FirmwareInventory/" + id + "-" + strings.ToUpper(component)
}

// simpleUpdate starts an update: the machine is the one Targets names (a
// system, its manager, or a FirmwareInventory item) or, without Targets,
// the only one the credentials open. The image must be on a loopback
// address; its first line may say "component=bios|bmc version=X" (real
// images carry such a header; without it the BIOS is updated and its minor
// version bumped, as sushy-tools does). 202 with the Task's Location.
func (h redfishAPI) simpleUpdate(w http.ResponseWriter, r *http.Request, c creds) {
	e := h.e
	var body struct {
		ImageURI         string
		Targets          []string
		TransferProtocol string
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.ImageURI == "" {
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "The action UpdateService.SimpleUpdate requires the parameter ImageURI to be present in the request body.")
		return
	}
	u, err := url.Parse(body.ImageURI)
	if err != nil || u.Scheme != "http" || !loopbackHost(u.Hostname()) {
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueFormatError",
			fmt.Sprintf("The value %s for the parameter ImageURI in the action UpdateService.SimpleUpdate is of a different format than the parameter can accept (an http URL on a loopback address).", body.ImageURI))
		return
	}
	m := h.updateTarget(c, body.Targets)
	if m == nil {
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueError",
			"The value for the parameter Targets in the action UpdateService.SimpleUpdate is invalid: name one system this account manages.")
		return
	}
	e.updates.wg.Add(1)
	t := e.updates.addTask(m, firmwareTask, "Applying "+body.ImageURI)
	go e.runUpdate(m, t.ID, body.ImageURI)
	w.Header().Set("Location", rfMonitors+"/"+t.ID)
	writeJSON(w, http.StatusAccepted, taskJSON(&t))
}

// loopbackHost reports whether host is localhost or a loopback IP literal.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h redfishAPI) updateTarget(c creds, targets []string) *Machine {
	e := h.e
	if len(targets) == 0 {
		var only *Machine
		for _, m := range e.machines {
			if m.checkAuth(c.user, c.password) {
				if only != nil {
					return nil
				}
				only = m
			}
		}
		return only
	}
	if len(targets) != 1 {
		return nil
	}
	segs := splitPath(targets[0])
	var id string
	switch {
	case len(segs) == 4 && (segs[2] == "Systems" || segs[2] == "Managers"):
		id = segs[3]
	case len(segs) == 5 && segs[2] == "UpdateService" && segs[3] == "FirmwareInventory":
		if i := strings.LastIndex(segs[4], "-"); i > 0 {
			id = segs[4][:i]
		}
	}
	m := e.byID[id]
	if m == nil || !m.checkAuth(c.user, c.password) {
		return nil
	}
	return m
}

// runUpdate fetches the image and flashes it, then completes the task.
func (e *Emulator) runUpdate(m *Machine, id, image string) {
	defer e.updates.wg.Done()
	component, version, err := e.fetchFirmware(image)
	state, msg := TaskCompleted, ""
	if err != nil {
		state, msg = TaskException, fmt.Sprintf("Failed fetching firmware image from %s: %v", image, err)
		e.log.Warn("firmware update failed", "machine", m.ID, "image", image, "err", err)
	} else {
		v := m.flash(component, version, image)
		msg = fmt.Sprintf("%s firmware updated to %s", strings.ToUpper(component), v)
		e.log.Info("firmware updated", "machine", m.ID, "component", component, "version", v)
	}
	e.updates.endTask(id, state, msg)
}

// fetchFirmware downloads an image and reads its header line.
func (e *Emulator) fetchFirmware(image string) (component, version string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, image, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := e.mediaClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	br := bufio.NewReader(io.LimitReader(resp.Body, 64<<20))
	line, _ := br.ReadString('\n')
	if _, err := io.Copy(io.Discard, br); err != nil {
		return "", "", err
	}
	component = FirmwareBIOS
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "component":
			if v != FirmwareBIOS && v != FirmwareBMC {
				return "", "", fmt.Errorf("the image is for component %q, not bios or bmc", v)
			}
			component = v
		case "version":
			version = v
		}
	}
	return component, version, nil
}

// serveTasks serves TaskService/Tasks/{id} (the Task) and
// TaskService/TaskMonitors/{id} (DSP0266's task monitor, what SimpleUpdate's
// Location names): both 202 with the Task while it runs, 200 once it ended.
func (h redfishAPI) serveTasks(w http.ResponseWriter, r *http.Request, monitor bool, sub []string) {
	e := h.e
	if r.Method != http.MethodGet {
		methodNotAllowed(w)
		return
	}
	e.updates.mu.Lock()
	var t *updateTask
	if len(sub) == 1 {
		if x := e.updates.tasks[sub[0]]; x != nil {
			cp := *x
			t = &cp
		}
	}
	e.updates.mu.Unlock()
	if t == nil {
		notFound(w, r)
		return
	}
	// 202 while it runs, on the monitor and on the Task itself: sushy's
	// TaskMonitor.from_response takes the returned Task's @odata.id as
	// the monitor it polls, and a 200 there is "done" to it.
	status := http.StatusOK
	if t.State == TaskRunning {
		status = http.StatusAccepted
	}
	writeJSON(w, status, taskJSON(t))
}

func taskJSON(t *updateTask) map[string]any {
	out := map[string]any{
		"@odata.type": "#Task.v1_7_0.Task", "@odata.id": rfTasks + "/" + t.ID, "Id": t.ID, "Name": t.Name,
		"TaskState": t.State, "TaskStatus": t.Status, "StartTime": t.Start.Format(time.RFC3339),
		"PercentComplete": 0, "Messages": []any{map[string]any{"Message": t.Message}}, "TaskMonitor": rfMonitors + "/" + t.ID,
	}
	if !t.End.IsZero() {
		out["EndTime"] = t.End.Format(time.RFC3339)
		out["PercentComplete"] = 100
	}
	return out
}
