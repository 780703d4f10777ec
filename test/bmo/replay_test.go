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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
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
	for _, h := range []string{"virtual-media", "ipxe", "custom-deploy"} {
		e.images["/images/"+h+".raw"] = wholeDiskImage()
	}
	e.images[liveISOPath] = liveISO(t)
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

	// Two drives each: BMO's RAID 1 root volume needs a pair.
	hw := &bmcemu.Hardware{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2, Arch: "x86",
		DIMMs: 4, DIMMMiB: 8192, DisksBytes: []int64{100 << 30, 100 << 30}}
	emu, err := bmcemu.Start(context.Background(), bmcemu.Config{Count: 5, StateDir: t.TempDir(), Hardware: hw,
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

// TestBMOReplay drives BareMetalHosts through BMO's provisioner against
// `anvil serve` and the BMC emulator, each phase a subtest: one host with a
// redfish-virtualmedia BMC address (boot redfish-virtual-media, fast
// inspection through Redfish, servicing with a BIOS setting and a firmware
// update, BMC event subscription), one with a redfish address (boot ipxe,
// agent inspection, hardware RAID through manual cleaning), a third
// with disablePowerOff (registered, rebooted, deleted), and two by virtual
// media whose images take the other deploy interfaces: a live ISO
// (deploy_interface ramdisk) and a custom deploy (custom-agent). A failing phase
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
		{"no-power-off", "node-03", "redfish+http", false, "", (*hostRun).noPowerOffFlow},
		{"live-iso", "node-04", "redfish-virtualmedia+http", true, "", (*hostRun).liveISOFlow},
		{"custom-deploy", "node-05", "redfish-virtualmedia+http", true, "sha256", (*hostRun).customDeployFlow},
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
						AutomatedCleaningMode: "metadata", DisablePowerOff: hc.name == "no-power-off"}}}
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

// noPowerOffFlow is a host with disablePowerOff (1.95): registered with
// it, rebooted where others power off, deleted without powering off.
func (h *hostRun) noPowerOffFlow(t *testing.T) {
	if h.phase(t, "register", needsRegister, h.register); h.p.nodeID == "" {
		return
	}
	h.phase(t, "reboot", "", h.reboot)
	h.phase(t, "delete", "", h.deleteNoPowerOff)
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
