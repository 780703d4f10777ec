package bmo_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

const (
	mib          = 1 << 20
	pollInterval = 50 * time.Millisecond
	// diskBytes is each machine's disk: room for the image and IPA's 64 MiB
	// config drive partition after it.
	diskBytes = 128 * mib
	// What each phase waits for work on other branches; a phase that fails
	// prints it.
	needsBIOS     = "GET /v1/nodes/{id}/bios and /firmware, the redfish bios and firmware interfaces and the emulator's BIOS and UpdateService (branch h-bios)"
	needsRAID     = "PUT /v1/nodes/{id}/states/raid and the redfish RAID interface with the emulator's Storage (branch h-raid)"
	needsVendor   = "the inventory after redfish inspection and the BMC event subscription vendor passthru (branch h-vendor)"
	needsRegister = "firmware_interface redfish (h-bios) and raid_interface redfish (h-raid) accepted on the redfish hardware type"
)

// env is Anvil, the emulated machines and the test's file server.
type env struct {
	api   string
	emu   *bmcemu.Emulator
	files string

	mu      sync.Mutex
	fetched map[string]int // file server paths and how often they were fetched
	images  map[string][]byte
}

func startEnv(t *testing.T) *env {
	addr := testbin.FreeAddr(t)
	e := &env{api: "http://" + addr, fetched: map[string]int{}, images: map[string][]byte{}}
	for _, h := range []string{"virtual-media", "ipxe"} {
		e.images["/images/"+h+".raw"] = wholeDiskImage()
	}
	fs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.fetched[r.URL.Path]++
		img, isImage := e.images[r.URL.Path]
		e.mu.Unlock()
		switch {
		case isImage:
			http.ServeContent(w, r, "image.raw", time.Time{}, bytes.NewReader(img))
		case strings.HasPrefix(r.URL.Path, "/deploy/"), strings.HasPrefix(r.URL.Path, "/firmware/"),
			strings.HasPrefix(r.URL.Path, "/dataimage/"):
			_, _ = w.Write([]byte("stand-in for " + r.URL.Path + "\n"))
		case r.URL.Path == "/events":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(fs.Close)
	e.files = fs.URL

	emu, err := bmcemu.Start(context.Background(), bmcemu.Config{Count: 2, StateDir: t.TempDir(),
		Agent: &bmcemu.AgentConfig{APIURL: e.api, DiskDir: t.TempDir(), DiskBytes: diskBytes,
			HeartbeatInterval: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	e.emu = emu
	testbin.ServeAt(t, anvilBin, addr, filepath.Join(t.TempDir(), "anvil.db"), "bmo-replay",
		"--http-url", e.api+"/boot", "--http-root", t.TempDir())
	return e
}

// wholeDiskImage is a 4 MiB raw whole-disk image: an MBR with one Linux
// partition (sectors 2048-6143) of random bytes, so that the agent can add
// the config drive partition after it.
func wholeDiskImage() []byte {
	img := make([]byte, 4*mib)
	_, _ = rand.Read(img[mib:])
	_, _ = rand.Read(img[440:444]) // disk signature
	entry := img[446:462]
	entry[4] = 0x83 // Linux
	binary.LittleEndian.PutUint32(entry[8:], 2048)
	binary.LittleEndian.PutUint32(entry[12:], 4096)
	img[510], img[511] = 0x55, 0xAA
	return img
}

func (e *env) fetches(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fetched[path]
}

func (e *env) imageURL(host string) string { return e.files + "/images/" + host + ".raw" }

func (e *env) imageSum(host string) string {
	s := sha256.Sum256(e.images["/images/"+host+".raw"])
	return hex.EncodeToString(s[:])
}

// recorder is the HTTP transport of a BMO client: it keeps the transcript
// of calls and the microversion each carried.
type recorder struct {
	mu    sync.Mutex
	calls []string
	vers  map[string]int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	v := req.Header.Get("X-OpenStack-Ironic-API-Version")
	resp, err := http.DefaultTransport.RoundTrip(req)
	line := fmt.Sprintf("%s %s [%s]", req.Method, req.URL.RequestURI(), v)
	if err != nil {
		line += " error " + err.Error()
	} else {
		line += fmt.Sprintf(" -> %d", resp.StatusCode)
	}
	r.mu.Lock()
	r.calls = append(r.calls, line)
	if r.vers == nil {
		r.vers = map[string]int{}
	}
	r.vers[v]++
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) transcript() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.calls, "\n")
}

func (r *recorder) versions() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.vers {
		out[k] = v
	}
	return out
}

// newClient is clients.IronicClient with noauth: the endpoint BMO is given
// (IRONIC_ENDPOINT, ".../v1/"), microversion 1.89 until negotiated.
func newClient(t *testing.T, api string, rec *recorder) *gophercloud.ServiceClient {
	c, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: api + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	c.Microversion = fmt.Sprintf("1.%d", baseline)
	c.HTTPClient = http.Client{Transport: rec, Timeout: 30 * time.Second}
	return c
}

// TestBMOReplay drives two BareMetalHosts through BMO's provisioner against
// `anvil serve` and the BMC emulator, each phase a subtest: one host with a
// redfish-virtualmedia BMC address (boot redfish-virtual-media, fast
// inspection through Redfish, servicing with a BIOS setting and a firmware
// update, BMC event subscription), one with a redfish address (boot ipxe,
// agent inspection, hardware RAID through manual cleaning). A failing phase
// names the work it needs when that is on another branch; once the node
// exists every later phase still runs, from whatever state the failure
// left (BMO's code handles each), and fails on its own terms.
func TestBMOReplay(t *testing.T) {
	e := startEnv(t)

	rec := &recorder{}
	c := newClient(t, e.api, rec)
	var feat features
	if !t.Run("negotiate", func(t *testing.T) {
		// clients.GetAvailableFeatures, then ChooseMicroversion
		mvs, err := utils.GetSupportedMicroversions(t.Context(), c)
		if err != nil {
			t.Fatalf("GetSupportedMicroversions: %v\n%s", err, rec.transcript())
		}
		if mvs.MaxMajor != 1 || mvs.MaxMinor < baseline {
			t.Fatalf("ironic API 1.%d or newer is required, got %d.%d", baseline, mvs.MaxMajor, mvs.MaxMinor)
		}
		feat = features{MaxVersion: mvs.MaxMinor}
		if got := feat.ChooseMicroversion(); got != "1.110" {
			t.Errorf("BMO chooses %s from the advertised maximum 1.%d; Anvil claims 1.110", got, mvs.MaxMinor)
		}
		t.Logf("negotiation:\n%s", rec.transcript())
	}) {
		return
	}

	hosts := []struct {
		name, machine, scheme string
		fast                  bool
		checksumType          string
		flow                  func(h *hostRun, t *testing.T)
	}{
		{"virtual-media", "node-01", "redfish-virtualmedia+http", true, "sha256", (*hostRun).virtualMediaFlow},
		{"ipxe", "node-02", "redfish+http", false, "", (*hostRun).ipxeFlow},
	}
	for _, hc := range hosts {
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()
			m := e.emu.Machine(hc.machine)
			u, _ := url.Parse(e.emu.URL())
			hrec := &recorder{}
			hc2 := newClient(t, e.api, hrec)
			hc2.Microversion = feat.ChooseMicroversion()
			mode := ""
			if hc.fast {
				mode = "fast"
			}
			h := &hostRun{env: e, m: m, rec: hrec, name: hc.name, checksumType: hc.checksumType,
				p: &provisioner{c: hc2, features: feat, logf: t.Logf,
					config: ironicConfig{deployKernelURL: e.files + "/deploy/ironic-python-agent.kernel",
						deployRamdiskURL: e.files + "/deploy/ironic-python-agent.initramfs",
						deployISOURL:     e.files + "/deploy/ironic-python-agent.iso"},
					host: bmh{Namespace: "metal3", Name: hc.name, UID: uidFor(hc.name),
						BMCAddress: hc.scheme + "://" + u.Host + "/redfish/v1/Systems/" + hc.machine,
						Username:   m.Username, Password: m.Password(),
						BootMACAddress: strings.ToLower(m.HW.MACs[0]), InspectionMode: mode, BootMode: "UEFI",
						RootDeviceHints:       &rootDeviceHints{DeviceName: m.Disk()},
						AutomatedCleaningMode: "metadata"}}}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("BMO's calls for %s:\n%s", hc.name, hrec.transcript())
				}
			})
			hc.flow(h, t)
			for v, n := range hrec.versions() {
				if v != feat.ChooseMicroversion() {
					t.Errorf("%d calls at microversion %q, BMO sends %s on every call", n, v, feat.ChooseMicroversion())
				}
			}
		})
	}
}

// uidFor is a stable Kubernetes UID for a host (BMO sends it as
// instance_uuid and in the config drive's meta data).
func uidFor(name string) string {
	s := sha256.Sum256([]byte("bmo-replay/" + name))
	h := hex.EncodeToString(s[:16])
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// hostRun is one BareMetalHost going through BMO's states.
type hostRun struct {
	env          *env
	p            *provisioner
	m            *bmcemu.Machine
	rec          *recorder
	name         string
	checksumType string

	settings map[string]biosSetting
}

func (h *hostRun) virtualMediaFlow(t *testing.T) {
	if h.phase(t, "register", needsRegister, h.register); h.p.nodeID == "" {
		return
	}
	h.phase(t, "firmware-read", needsBIOS, h.firmwareRead)
	h.phase(t, "inspect", needsVendor, h.inspect)
	h.phase(t, "bmc-events", needsVendor, h.bmcEvents)
	h.phase(t, "provision", "", h.provision)
	h.phase(t, "servicing", needsBIOS, h.servicing)
	h.phase(t, "data-image", "", h.dataImage)
	h.phase(t, "deprovision", "", h.deprovision)
	h.phase(t, "delete", "", h.delete)
}

func (h *hostRun) ipxeFlow(t *testing.T) {
	if h.phase(t, "register", needsRegister, h.register); h.p.nodeID == "" {
		return
	}
	h.phase(t, "firmware-read", needsBIOS, h.firmwareRead)
	h.phase(t, "inspect", "", h.inspect)
	h.phase(t, "prepare-raid", needsRAID, h.prepareRAID)
	h.phase(t, "provision", "", h.provision)
	h.phase(t, "deprovision", "", h.deprovision)
	h.phase(t, "delete", "", h.delete)
}

// phase runs one of BMO's states as a subtest; when it fails, it says
// what it waits for if that is built elsewhere.
func (h *hostRun) phase(t *testing.T, name, needs string, f func(t *testing.T)) bool {
	return t.Run(name, func(t *testing.T) {
		if needs != "" {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("phase %s/%s needs %s", h.name, name, needs)
				}
			})
		}
		f(t)
	})
}

// reconcile calls step as BMO's controller does: again while the result is
// dirty, with a fresh node cache each time, until done or the deadline. An
// error (which BMO would only retry) fails the test.
func (h *hostRun) reconcile(t *testing.T, what string, timeout time.Duration, step func(ctx context.Context) (result, error)) result {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h.p.cachedNode = nil
		r, err := step(t.Context())
		if err != nil {
			t.Fatalf("%s: %v (BMO would retry this error without end; %s)", what, err, h.nodeState(t))
		}
		if r.ErrorMessage != "" || !r.Dirty {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %s: %s", what, timeout, h.nodeState(t))
		}
		time.Sleep(pollInterval) // polling with a deadline, as BMO requeues
	}
}

// registered is one pass of a state after registration: BMO's
// ensureRegistered (Register, then GetFirmwareComponents, whose error it
// only logs) before the state's own step.
func (h *hostRun) registered(step func(ctx context.Context) (result, error)) func(ctx context.Context) (result, error) {
	return func(ctx context.Context) (result, error) {
		r, id, err := h.p.Register(ctx, false, false)
		if err != nil || r.Dirty || r.ErrorMessage != "" {
			if r.ErrorMessage != "" {
				r.ErrorMessage = "registration: " + r.ErrorMessage
			}
			return r, err
		}
		if id != "" {
			h.p.nodeID = id
		}
		_, _ = h.p.GetFirmwareComponents(ctx) // registerHost: "deferring HostFirmwareComponents creation"
		return step(ctx)
	}
}

// node reads the node as BMO does (nodes.Get) for the test's checks.
func (h *hostRun) node(t *testing.T) *nodes.Node {
	t.Helper()
	n, err := nodes.Get(t.Context(), h.p.c, h.p.nodeID).Extract()
	if err != nil {
		t.Fatalf("get node %s: %v", h.p.nodeID, err)
	}
	return n
}

func (h *hostRun) nodeState(t *testing.T) string {
	if h.p.nodeID == "" {
		return "no node yet"
	}
	n, err := nodes.Get(context.Background(), h.p.c, h.p.nodeID).Extract()
	if err != nil {
		return "node: " + err.Error()
	}
	return fmt.Sprintf("provision_state %q, target %q, power %q, last_error %q, maintenance %v",
		n.ProvisionState, n.TargetProvisionState, n.PowerState, n.LastError, n.Maintenance)
}

// settle waits until the node is in a stable state with no lock held, so
// that the next phase starts from where BMO would find it after a failure.
func (h *hostRun) settle(t *testing.T) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		n, err := nodes.Get(context.Background(), h.p.c, h.p.nodeID).Extract()
		if err == nil && n.Reservation == "" && n.TargetProvisionState == "" {
			return
		}
		time.Sleep(pollInterval)
	}
	t.Logf("node did not settle: %s", h.nodeState(t))
}

func (h *hostRun) register(t *testing.T) {
	r := h.reconcile(t, "register", 30*time.Second, func(ctx context.Context) (result, error) {
		r, id, err := h.p.Register(ctx, false, false)
		if id != "" {
			h.p.nodeID = id // the controller stores it in the host's status
		}
		return r, err
	})
	if r.ErrorMessage != "" {
		t.Fatalf("registration failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	acc, _ := newAccess(h.p.host.BMCAddress)
	if n.ProvisionState != string(nodes.Manageable) || n.LastError != "" || n.Name != h.p.nodeName() {
		t.Errorf("after registration: name %q, provision_state %q, last_error %q", n.Name, n.ProvisionState, n.LastError)
	}
	wantIfaces := map[string]string{"driver": "redfish", "boot_interface": acc.BootInterface(), "firmware_interface": "redfish",
		"raid_interface": "redfish", "inspect_interface": inspectInterfaceForMode(h.p.host.InspectionMode, acc),
		"deploy_interface": "direct", "power_interface": "redfish", "management_interface": "redfish"}
	gotIfaces := map[string]string{"driver": n.Driver, "boot_interface": n.BootInterface, "firmware_interface": n.FirmwareInterface,
		"raid_interface": n.RAIDInterface, "inspect_interface": n.InspectInterface, "deploy_interface": n.DeployInterface,
		"power_interface": n.PowerInterface, "management_interface": n.ManagementInterface}
	for k, v := range wantIfaces {
		if gotIfaces[k] != v {
			t.Errorf("%s = %q, want %q", k, gotIfaces[k], v)
		}
	}
	u, _ := url.Parse(h.env.emu.URL())
	if n.DriverInfo["redfish_address"] != "http://"+u.Host || n.DriverInfo["redfish_system_id"] != "/redfish/v1/Systems/"+h.m.ID ||
		n.DriverInfo["redfish_password"] != "******" {
		t.Errorf("driver_info %v", n.DriverInfo)
	}
	if acc.virtualMedia {
		if n.DriverInfo["deploy_iso"] != h.p.config.deployISOURL || n.DriverInfo["deploy_kernel"] != nil {
			t.Errorf("virtual media host: driver_info %v, want deploy_iso only", n.DriverInfo)
		}
	} else if n.DriverInfo["deploy_kernel"] != h.p.config.deployKernelURL || n.DriverInfo["deploy_ramdisk"] != h.p.config.deployRamdiskURL {
		t.Errorf("ipxe host: driver_info %v, want deploy_kernel and deploy_ramdisk", n.DriverInfo)
	}
	if n.AutomatedClean == nil || !*n.AutomatedClean || n.Properties["capabilities"] != "boot_mode:uefi" ||
		n.Properties["cpu_arch"] != h.p.cpuArch() || n.DisablePowerOff {
		t.Errorf("automated_clean %v, properties %v, disable_power_off %v", n.AutomatedClean, n.Properties, n.DisablePowerOff)
	}
	pp, err := h.p.getPorts(t.Context(), n.UUID, "")
	if err != nil || len(pp) != 1 || pp[0].Address != h.p.host.BootMACAddress {
		t.Errorf("ports of the node: %+v, %v; want the boot MAC %s", pp, err, h.p.host.BootMACAddress)
	}
	// a second Register finds the node by ID and changes nothing
	before := len(strings.Split(h.rec.transcript(), "\n"))
	h.p.cachedNode = nil
	if r, _, err := h.p.Register(t.Context(), false, false); err != nil || r.Dirty || r.ErrorMessage != "" {
		t.Errorf("Register again: %+v %v", r, err)
	}
	for _, line := range strings.Split(h.rec.transcript(), "\n")[before:] {
		if !strings.HasPrefix(line, "GET ") {
			t.Errorf("Register of a registered host sent %s", line)
		}
	}
}

func (h *hostRun) firmwareRead(t *testing.T) {
	// hostfirmwaresettings_controller: GetFirmwareSettings(ctx, true)
	settings, err := h.p.GetFirmwareSettings(t.Context(), true)
	if err != nil {
		t.Fatalf("GetFirmwareSettings: %v", err)
	}
	if len(settings) == 0 {
		t.Fatal("GET bios?detail=True: no settings")
	}
	h.settings = settings
	if _, _, ok := pickSetting(settings); !ok {
		t.Errorf("no writable enumeration setting with another allowable value among %v", settings)
	}
	comps, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents: %v", err)
	}
	var names []string
	for _, c := range comps {
		names = append(names, c.Component)
		if c.CurrentVersion == "" || c.InitialVersion == "" {
			t.Errorf("component %s: current_version %q, initial_version %q", c.Component, c.CurrentVersion, c.InitialVersion)
		}
	}
	if !slices.Contains(names, "bios") || !slices.Contains(names, "bmc") {
		t.Errorf("firmware components %v, want bios and bmc", names)
	}
}

// pickSetting is what a user edits in HostFirmwareSettings: the first
// (by name) writable enumeration setting, set to another allowable value.
func pickSetting(s map[string]biosSetting) (string, string, bool) {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := s[k]
		if v.AttributeType != "Enumeration" || (v.ReadOnly != nil && *v.ReadOnly) {
			continue
		}
		for _, a := range v.AllowableValues {
			if a != v.Value {
				return k, a, true
			}
		}
	}
	return "", "", false
}

func (h *hostRun) inspect(t *testing.T) {
	starts := 0
	var details *hardwareDetails
	r := h.reconcile(t, "inspect", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, started, d, err := h.p.InspectHardware(ctx, false, false)
		if started {
			starts++
			if starts > 1 {
				h.settle(t)
				t.Fatalf("BMO started inspection a second time: after the first one GET /v1/nodes/%s/inventory answered 404 (BMO loops like this)", h.p.nodeID)
			}
		}
		if d != nil {
			details = d
		}
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("inspection failed: %s", r.ErrorMessage)
	}
	if starts != 1 || details == nil {
		t.Fatalf("inspection started %d times, details %v", starts, details)
	}
	d := details
	h.p.hardwareData = d // the controller stores it in the HardwareData object
	if d.PluginDataErr != nil {
		t.Errorf("plugin_data is not Ironic's standard plugin data: %v", d.PluginDataErr)
	}
	if d.CPU.Arch == "" || d.CPU.Count <= 0 || d.RAMMebibytes <= 0 {
		t.Errorf("cpu %+v, ram %d MiB", d.CPU, d.RAMMebibytes)
	}
	var macs []string
	for _, nic := range d.NIC {
		macs = append(macs, strings.ToLower(nic.MAC))
	}
	if len(d.Storage) == 0 || len(macs) == 0 {
		t.Errorf("storage %+v, NICs %v", d.Storage, macs)
	}
	for _, s := range d.Storage {
		if s.Name == "" {
			t.Errorf("storage without a name: %+v", s)
		}
	}
	if h.p.host.InspectionMode == "fast" {
		// Redfish describes the emulated machine itself
		if !slices.Contains(macs, h.p.host.BootMACAddress) {
			t.Errorf("NICs %v lack the boot MAC %s", macs, h.p.host.BootMACAddress)
		}
		for _, s := range d.Storage {
			if s.SizeBytes <= 0 {
				t.Errorf("storage %+v", s)
			}
		}
		if d.Manufacturer == "" {
			t.Errorf("system vendor %q/%q from Redfish", d.Manufacturer, d.ProductName)
		}
	} else {
		// The emulated agent runs on the test's host: its inventory holds
		// the host's CPUs, memory, NICs and block devices, and the
		// machine's disk file, which the root device hint names.
		found := false
		for _, s := range d.Storage {
			found = found || s.Name == h.m.Disk() && s.SizeBytes == diskBytes
		}
		if !found {
			t.Errorf("the agent's inventory lacks the machine's disk %s: %+v", h.m.Disk(), d.Storage)
		}
	}
	if n := h.node(t); n.ProvisionState != string(nodes.Manageable) || n.LastError != "" {
		t.Errorf("after inspection: %s", h.nodeState(t))
	}
}

func (h *hostRun) bmcEvents(t *testing.T) {
	id, err := h.p.AddBMCEventSubscriptionForNode(t.Context(), h.env.files+"/events", "bmo-replay",
		[]map[string]string{{"X-Replay": h.name}})
	if err != nil {
		t.Fatalf("create_subscription: %v", err)
	}
	if id == "" {
		t.Fatal("create_subscription returned no id")
	}
	if err := h.p.RemoveBMCEventSubscriptionForNode(t.Context(), id); err != nil {
		t.Fatalf("delete_subscription %s: %v", id, err)
	}
}

func (h *hostRun) prepareRAID(t *testing.T) {
	data := prepareData{TargetRAID: []hardwareRAIDVolume{{Name: "root", Level: "1"}}}
	started := false
	r := h.reconcile(t, "prepare", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, s, err := h.p.Prepare(ctx, data, !started, false)
		started = started || s
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("manual cleaning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Manageable) || n.LastError != "" {
		t.Errorf("after manual cleaning: %s", h.nodeState(t))
	}
	disks, _ := n.TargetRAIDConfig["logical_disks"].([]any)
	if len(disks) != 1 {
		t.Errorf("target_raid_config %v, want BMO's one logical disk", n.TargetRAIDConfig)
	}
	if got, _ := n.RAIDConfig["logical_disks"].([]any); len(got) != 1 {
		t.Errorf("raid_config %v after raid.create_configuration, want one logical disk", n.RAIDConfig)
	}
}

func (h *hostRun) provision(t *testing.T) {
	raw := "raw"
	data := provisionData{Image: image{URL: h.env.imageURL(h.name), Checksum: h.env.imageSum(h.name),
		ChecksumType: h.checksumType, DiskFormat: &raw},
		UserData: "#cloud-config\nhostname: " + h.name + "\n"}
	r := h.reconcile(t, "provision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Provision(ctx, data)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("provisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Active) || n.PowerState != "power on" || n.LastError != "" || n.InstanceUUID != h.p.host.UID {
		t.Errorf("after provisioning: %s, instance_uuid %q", h.nodeState(t), n.InstanceUUID)
	}
	if !ironicHasSameImage(n, data.Image) {
		t.Errorf("instance_info %v does not hold BMO's image settings", n.InstanceInfo)
	}
	if rd, _ := n.InstanceInfo["root_device"].(map[string]any); rd["name"] != "s== "+h.m.Disk() {
		t.Errorf("instance_info root_device %v", n.InstanceInfo["root_device"])
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	// The image, but for the partition table, where the agent added the
	// config drive partition; BMO's config drive (its meta data carries
	// the host's UID, its user data the cloud-config) after the image.
	img := h.env.images["/images/"+h.name+".raw"]
	if !bytes.Equal(disk[512:len(img)], img[512:]) || !bytes.Equal(disk[:446], img[:446]) {
		t.Errorf("the machine's disk does not hold the image")
	}
	if rest := disk[len(img):]; !bytes.Contains(rest, []byte(h.p.host.UID)) || !bytes.Contains(rest, []byte("#cloud-config")) {
		t.Errorf("BMO's config drive is not on the disk after the image")
	}
	if st := h.m.Status(); st.Power != "On" || st.Running != bmcemu.RunningImage {
		t.Errorf("machine power %s, running %q; want On, the image", st.Power, st.Running)
	}
	if acc, _ := newAccess(h.p.host.BMCAddress); acc.virtualMedia {
		// the BMC downloaded BMO's deploy ISO when Anvil inserted it
		if n := h.env.fetches("/deploy/ironic-python-agent.iso"); n == 0 {
			t.Errorf("the deploy ISO was never fetched: the machine did not boot virtual media")
		}
		if md := h.m.Media(); md.Inserted {
			t.Errorf("virtual media still inserted after the deploy: %+v", md)
		}
	}
}

func (h *hostRun) servicing(t *testing.T) {
	if h.settings == nil {
		t.Fatal("no BIOS settings were read (phase firmware-read), so BMO has nothing to compare a target with")
	}
	name, value, ok := pickSetting(h.settings)
	if !ok {
		t.Fatal("no BIOS setting to change")
	}
	actual := map[string]string{}
	for k, v := range h.settings {
		actual[k] = v.Value
	}
	before, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents: %v", err)
	}
	data := servicingData{ActualFirmwareSettings: actual, TargetFirmwareSettings: map[string]string{name: value},
		TargetFirmwareUpdates: []map[string]string{{"component": "bios", "url": h.env.files + "/firmware/bios-2.0.bin"}},
		HasFirmwareSpec:       true}
	started := false
	r := h.reconcile(t, "servicing", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		r, s, err := h.p.Service(ctx, data, !started, false)
		started = started || s
		return r, err
	}))
	if r.ErrorMessage != "" {
		t.Errorf("servicing failed: %s", r.ErrorMessage)
		// BMO backs out when the user drops the firmware spec: abort →
		// active, where the next phases start
		back := data
		back.HasFirmwareSpec = false
		h.reconcile(t, "abort the failed servicing", 60*time.Second, h.registered(func(ctx context.Context) (result, error) {
			r, _, err := h.p.Service(ctx, back, false, true)
			return r, err
		}))
		return
	}
	if !started {
		t.Fatal("servicing never started")
	}
	if n := h.node(t); n.ProvisionState != string(nodes.Active) || n.LastError != "" {
		t.Errorf("after servicing: %s", h.nodeState(t))
	}
	after, err := h.p.GetFirmwareSettings(t.Context(), true)
	if err != nil {
		t.Fatalf("GetFirmwareSettings after servicing: %v", err)
	}
	if !sameSettings(after, data.TargetFirmwareSettings) {
		t.Errorf("BIOS setting %s = %q after bios.apply_configuration, want %q", name, after[name].Value, value)
	}
	comps, err := h.p.GetFirmwareComponents(t.Context())
	if err != nil {
		t.Fatalf("GetFirmwareComponents after servicing: %v", err)
	}
	for _, c := range comps {
		if c.Component != "bios" {
			continue
		}
		if c.LastVersionFlashed == "" || !c.Updated {
			t.Errorf("bios component after firmware.update: %+v (before %+v)", c, before)
		}
		return
	}
	t.Errorf("no bios component after firmware.update: %+v", comps)
}

func (h *hostRun) deprovision(t *testing.T) {
	r := h.reconcile(t, "deprovision", 90*time.Second, h.registered(func(ctx context.Context) (result, error) {
		return h.p.Deprovision(ctx, false)
	}))
	if r.ErrorMessage != "" {
		t.Fatalf("deprovisioning failed: %s", r.ErrorMessage)
	}
	n := h.node(t)
	if n.ProvisionState != string(nodes.Available) || n.LastError != "" {
		t.Errorf("after deprovisioning: %s", h.nodeState(t))
	}
	disk, err := os.ReadFile(h.m.Disk())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk[:mib], make([]byte, mib)) {
		t.Errorf("automated cleaning (metadata) left the disk's first MiB")
	}
	if st := h.m.Status(); st.Running == bmcemu.RunningImage {
		t.Errorf("the machine still runs the image after deprovisioning")
	}
}

func (h *hostRun) delete(t *testing.T) {
	// StateDeleting: no registration pass.
	r := h.reconcile(t, "delete", 30*time.Second, h.p.Delete)
	if r.ErrorMessage != "" {
		t.Fatalf("delete failed: %s", r.ErrorMessage)
	}
	if _, err := nodes.Get(t.Context(), h.p.c, h.p.nodeID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("GET of the deleted node: %v, want 404", err)
	}
	pages, err := ports.List(h.p.c, ports.ListOpts{Address: h.p.host.BootMACAddress}).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pp, _ := ports.ExtractPorts(pages); len(pp) != 0 {
		t.Errorf("ports left after the node's deletion: %+v", pp)
	}
}
