package bmcemu_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestHTTPBootURIPatch: the system accepts boot override UefiHttp with an
// HttpBootUri (what Ironic's redfish-https sets) and shows both; a URI that
// is not http(s) is refused with nothing changed; "" clears it.
func TestHTTPBootURIPatch(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	boot := func() map[string]any {
		t.Helper()
		r := do(t, "GET", sys, "admin", pw, "")
		var s struct{ Boot map[string]any }
		if err := json.Unmarshal([]byte(r.body), &s); err != nil {
			t.Fatal(err)
		}
		return s.Boot
	}
	allowed, _ := boot()["BootSourceOverrideTarget@Redfish.AllowableValues"].([]any)
	if !slices.Contains(allowed, any("UefiHttp")) {
		t.Errorf("allowable targets %v lack UefiHttp", allowed)
	}
	const uri = "http://10.0.2.100:6385/boot/n/TOKEN/boot.iso"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": "`+uri+`"}}`); r.status != 204 {
		t.Fatalf("PATCH UefiHttp: %d %s", r.status, r.body)
	}
	if b := boot(); b["BootSourceOverrideTarget"] != "UefiHttp" || b["HttpBootUri"] != uri {
		t.Errorf("after PATCH: %v", b)
	}
	if st := e.Machine("node-01").Status(); st.HTTPBootURI != uri {
		t.Errorf("status http_boot_uri %q", st.HTTPBootURI)
	}
	for _, bad := range []string{"tftp://10.0.2.2/x.efi", "not a url", "http:///nohost"} {
		r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "Pxe", "HttpBootUri": "`+bad+`"}}`)
		if r.status != 400 || !strings.Contains(r.body, "HttpBootUri") {
			t.Errorf("PATCH HttpBootUri %q: %d %s", bad, r.status, r.body)
		}
	}
	if b := boot(); b["BootSourceOverrideTarget"] != "UefiHttp" || b["HttpBootUri"] != uri {
		t.Errorf("a refused PATCH changed the boot settings: %v", b)
	}
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"HttpBootUri": ""}}`); r.status != 204 {
		t.Fatalf("clearing: %d %s", r.status, r.body)
	}
	if b := boot(); b["HttpBootUri"] != "" || b["BootSourceOverrideTarget"] != "UefiHttp" {
		t.Errorf("after clearing: %v", b)
	}
}

// TestQEMUUefiHttpBoot: a UEFI machine told to boot UefiHttp with an
// HttpBootUri runs OVMF's own HTTP boot (no NIC option ROM, PXE off): the
// emulator answers the firmware's DHCP with the URI on the VM's network,
// the firmware downloads the EFI binary there through a guest forward
// (a standalone GRUB printing a marker) and runs it. The one-time override
// is then spent: the next power-on boots the disk.
func TestQEMUUefiHttpBoot(t *testing.T) {
	needQEMU(t)
	ovmf := testbin.Need(t, "/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf")
	mk := testbin.Need(t, "grub-mkstandalone", "grub-common")
	testbin.Need(t, "/usr/lib/grub/x86_64-efi/normal.mod", "grub-efi-amd64-bin")
	dir := t.TempDir()
	const marker = "ANVIL-UEFI-HTTP-BOOT-OK"
	cfg := filepath.Join(dir, "grub.cfg")
	if err := os.WriteFile(cfg, []byte("echo "+marker+"\nsleep 60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loader := filepath.Join(dir, "loader.efi")
	if b, err := exec.Command(mk, "-O", "x86_64-efi", "-o", loader, "--locales=", "--fonts=", "--themes=",
		"--install-modules=normal echo sleep configfile memdisk tar", "boot/grub/grub.cfg="+cfg).CombinedOutput(); err != nil {
		t.Fatalf("grub-mkstandalone: %v\n%s", err, b)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fetched := make(chan string, 8)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case fetched <- r.Method + " " + r.URL.Path:
		default:
		}
		if r.URL.Path != "/loader.efi" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, loader)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	e := start(t, bmcemu.Config{Count: 1, StateDir: filepath.Join(dir, "state"),
		QEMU: &bmcemu.QEMUConfig{MemoryMiB: 256, DiskBytes: 1 << 20, UEFIFirmware: ovmf,
			Forwards: []bmcemu.Forward{{Guest: "10.0.2.100:80", Host: ln.Addr().String()}}}})
	m := e.Machine("node-01")
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": "http://10.0.2.100/loader.efi"}}`); r.status != 204 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "On"}`); r.status != 204 {
		t.Fatalf("On: %d %s", r.status, r.body)
	}
	console := m.Status().Console
	if !waitUntil(240*time.Second, func() bool { return strings.Contains(lastBoot(console), marker) }) {
		log, _ := os.ReadFile(filepath.Join(dir, "state", "node-01", "qemu.log"))
		t.Fatalf("the HttpBootUri's loader did not run:\n%s\nqemu.log:\n%s", lastBoot(console), log)
	}
	lb := lastBoot(console)
	for _, want := range []string{"boot device uefihttp, firmware uefi", "Start HTTP Boot over IPv4", "URI: http://10.0.2.100/loader.efi"} {
		if !strings.Contains(lb, want) {
			t.Errorf("console lacks %q:\n%s", want, lb)
		}
	}
	if st := m.Status(); st.BootTarget != bmcemu.BootNone {
		t.Errorf("the one-time override is not spent: target %q", st.BootTarget)
	}
	t.Logf("firmware fetched: %q", <-fetched)
}
