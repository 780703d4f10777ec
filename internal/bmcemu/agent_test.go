package bmcemu_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// TestAgentOnNetworkBoot: a pxe boot starts the agent with the machine's MACs
// and disk file, a reboot to pxe replaces it (never two at once), booting
// from disk or powering off stops it, and a disk boot reports whether the
// disk holds an image.
func TestAgentOnNetworkBoot(t *testing.T) {
	var mu sync.Mutex
	var events []string
	running := 0
	run := func(ctx context.Context, s bmcemu.AgentSpec) error {
		mu.Lock()
		running++
		if running > 1 {
			t.Errorf("two agents of %s at once", s.Machine)
		}
		events = append(events, "start "+s.Machine+" "+strings.Join(s.MACs, ",")+" "+s.HeartbeatInterval.String())
		mu.Unlock()
		s.Ready("127.0.0.1:1")
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // a slow shutdown
		mu.Lock()
		running--
		events = append(events, "stop "+s.Machine)
		mu.Unlock()
		return nil
	}
	dir := t.TempDir()
	e := start(t, bmcemu.Config{Count: 1, Agent: &bmcemu.AgentConfig{APIURL: "http://127.0.0.1:1", DiskDir: dir,
		DiskBytes: 1 << 20, Run: run}})
	m := e.Machine("node-01")
	fi, err := os.Stat(m.Disk())
	if err != nil || fi.Size() != 1<<20 {
		t.Fatalf("disk file %s: %v %v", m.Disk(), fi, err)
	}
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	boot := func(target, reset string) {
		t.Helper()
		if target != "" {
			if r := do(t, "PATCH", sys, "admin", pw, `{"Boot":{"BootSourceOverrideTarget":"`+target+`","BootSourceOverrideEnabled":"Continuous"}}`); r.status != 204 {
				t.Fatalf("patch boot: %+v", r)
			}
		}
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"`+reset+`"}`); r.status != 204 {
			t.Fatalf("reset %s: %+v", reset, r)
		}
	}
	waitRunning := func(want string, agent bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := m.Status()
			if st.Running == want && (st.AgentURL != "") == agent {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("running %q agent %q, want %q (agent %v)", st.Running, st.AgentURL, want, agent)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	boot("Pxe", "On")
	waitRunning(bmcemu.RunningAgent, true)
	boot("", "ForceRestart") // a new agent replaces the old one
	waitRunning(bmcemu.RunningAgent, true)
	boot("Hdd", "ForceRestart")
	waitRunning(bmcemu.RunningNoImage, false)
	if err := os.WriteFile(m.Disk(), []byte("an image"), 0o600); err != nil {
		t.Fatal(err)
	}
	boot("", "ForceRestart")
	waitRunning(bmcemu.RunningImage, false)
	boot("Pxe", "ForceRestart")
	waitRunning(bmcemu.RunningAgent, true)
	boot("", "ForceOff")
	waitRunning("", false)
	e.Close()
	mu.Lock()
	defer mu.Unlock()
	want := "start node-01 " + strings.Join(m.HW.MACs, ",") + " 1s"
	got := strings.Join(events, "|")
	if exp := strings.Join([]string{want, "stop node-01", want, "stop node-01", want, "stop node-01"}, "|"); got != exp {
		t.Errorf("agent events\n got %s\nwant %s", got, exp)
	}
}

// TestAgentOnVirtualMediaBoot: booting the virtual CD starts the agent only
// while the deploy ramdisk's image is inserted: a stand-in of a few bytes,
// or an ISO 9660 image whose boot configuration hands the agent its API
// (ipa-api-url=, as Anvil builds deploy ISOs); an ISO without it is a live
// OS (a ramdisk deploy's) and runs no agent; an empty drive boots to
// nothing of ours.
func TestAgentOnVirtualMediaBoot(t *testing.T) {
	isos := map[string][]byte{
		"/ramdisk.iso": []byte("an ISO"),
		"/deploy.iso":  isoImage(t, "/boot/grub/grub.cfg", "linux /vmlinuz console=ttyS0 ipa-api-url=http://10.0.2.100:6385 boot_method=vmedia\n"),
		"/live.iso":    isoImage(t, "/isolinux/isolinux.cfg", "default live\nlabel live\n  kernel /vmlinuz\n  append initrd=/initrd boot=live\n"),
	}
	iso := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(isos[r.URL.Path])
	}))
	defer iso.Close()
	e, m := startIdleAgent(t)
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	cd := e.URL() + "/redfish/v1/Managers/node-01/VirtualMedia/Cd"
	reset := func(kind, want string, agent bool) {
		t.Helper()
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"`+kind+`"}`); r.status != 204 {
			t.Fatalf("reset %s: %+v", kind, r)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := m.Status()
			if st.Running == want && (st.AgentURL != "") == agent {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: running %q agent %q, want %q (agent %v)", kind, st.Running, st.AgentURL, want, agent)
			}
			time.Sleep(5 * time.Millisecond) // polling with a deadline
		}
	}
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot":{"BootSourceOverrideTarget":"Cd","BootSourceOverrideEnabled":"Continuous"}}`); r.status != 204 {
		t.Fatalf("patch boot: %+v", r)
	}
	reset("On", bmcemu.RunningFirmware, false)
	if r := do(t, "POST", cd+"/Actions/VirtualMedia.InsertMedia", "admin", pw, `{"Image": "`+iso.URL+`/ramdisk.iso"}`); r.status != 204 {
		t.Fatalf("InsertMedia: %+v", r)
	}
	reset("ForceRestart", bmcemu.RunningAgent, true)
	for _, c := range []struct {
		image, running string
		agent          bool
	}{{"/deploy.iso", bmcemu.RunningAgent, true}, {"/live.iso", bmcemu.RunningLiveISO, false}} {
		if r := do(t, "POST", cd+"/Actions/VirtualMedia.InsertMedia", "admin", pw, `{"Image": "`+iso.URL+c.image+`"}`); r.status != 204 {
			t.Fatalf("InsertMedia %s: %+v", c.image, r)
		}
		reset("ForceRestart", c.running, c.agent)
	}
	if r := do(t, "POST", cd+"/Actions/VirtualMedia.EjectMedia", "admin", pw, `{}`); r.status != 204 {
		t.Fatalf("EjectMedia: %+v", r)
	}
	reset("ForceRestart", bmcemu.RunningFirmware, false)
}

// isoImage is an ISO 9660 image holding one file, name, with content.
func isoImage(t *testing.T, name, content string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.iso")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := t.TempDir()
	fs, err := iso9660.Create(file.New(f, false), 0, 0, 2048, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Mkdir(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
	w, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, VolumeIdentifier: "TEST"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startIdleAgent starts one machine (a 1 MiB disk, its own state
// directory) whose agent, started on every boot that runs one, only
// reports its address as ready and waits to be stopped.
func startIdleAgent(t *testing.T) (*bmcemu.Emulator, *bmcemu.Machine) {
	t.Helper()
	run := func(ctx context.Context, s bmcemu.AgentSpec) error {
		s.Ready("127.0.0.1:1")
		<-ctx.Done()
		return nil
	}
	e := start(t, bmcemu.Config{Count: 1, StateDir: t.TempDir(), Agent: &bmcemu.AgentConfig{APIURL: "http://127.0.0.1:1",
		DiskDir: t.TempDir(), DiskBytes: 1 << 20, Run: run}})
	return e, e.Machine("node-01")
}
