package bmcemu_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/isoimage"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestAgentOnAnvilISO: ISOs as Anvil builds them (internal/isoimage, with
// Debian's isolinux and GRUB): the deploy ISO, whose command line carries
// ipa-api-url as internal/boot's ISOCmdline writes it, boots the agent
// when the BMC's boot override is Cd; the same kind of ISO without it (an
// instance's own kernel and ramdisk, a ramdisk deploy's live OS) does not.
func TestAgentOnAnvilISO(t *testing.T) {
	l := isoimage.DefaultLoaders()
	if err := l.Check(); err != nil {
		testbin.Missing(t, err.Error())
	}
	dir := t.TempDir()
	kernel, ramdisk := filepath.Join(dir, "vmlinuz"), filepath.Join(dir, "initramfs")
	for _, f := range []string{kernel, ramdisk} {
		if err := os.WriteFile(f, []byte("stand-in for "+filepath.Base(f)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	build := func(name, cmdline string) string {
		p := filepath.Join(dir, name)
		if err := isoimage.Build(context.Background(), p, isoimage.Input{Kernel: kernel, Ramdisk: ramdisk, Cmdline: cmdline}, l); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := map[string]string{
		"/deploy.iso": build("deploy.iso", "console=ttyS0 ipa-api-url=http://127.0.0.1:6385 boot_method=vmedia"),
		"/live.iso":   build("live.iso", "console=ttyS0 boot=live"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, files[r.URL.Path])
	}))
	defer srv.Close()
	e, m := startIdleAgent(t)
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	cd := e.URL() + "/redfish/v1/Managers/node-01/VirtualMedia/Cd"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot":{"BootSourceOverrideTarget":"Cd","BootSourceOverrideEnabled":"Continuous"}}`); r.status != 204 {
		t.Fatalf("patch boot: %+v", r)
	}
	for i, c := range []struct{ image, running string }{
		{"/deploy.iso", bmcemu.RunningAgent}, {"/live.iso", bmcemu.RunningLiveISO}, {"/deploy.iso", bmcemu.RunningAgent},
	} {
		if r := do(t, "POST", cd+"/Actions/VirtualMedia.InsertMedia", "admin", pw, `{"Image": "`+srv.URL+c.image+`"}`); r.status != 204 {
			t.Fatalf("InsertMedia %s: %+v", c.image, r)
		}
		reset := "ForceRestart"
		if i == 0 {
			reset = "On"
		}
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"`+reset+`"}`); r.status != 204 {
			t.Fatalf("reset: %+v", r)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := m.Status()
			if st.Running == c.running && (st.AgentURL != "") == (c.running == bmcemu.RunningAgent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: running %q agent %q, want %q", c.image, st.Running, st.AgentURL, c.running)
			}
			time.Sleep(5 * time.Millisecond) // polling with a deadline
		}
	}
}
