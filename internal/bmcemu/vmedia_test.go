package bmcemu_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

func decode(t *testing.T, r reply) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
	return v
}

// TestVirtualMediaShapes walks from the service root to the Cd device the
// way sushy does (Managers, Links.ManagedBy, VirtualMedia) and checks the
// fields and actions sushy-tools' template has.
func TestVirtualMediaShapes(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 2})
	root := decode(t, do(t, "GET", e.URL()+"/redfish/v1/", "", "", ""))
	if root["Managers"].(map[string]any)["@odata.id"] != "/redfish/v1/Managers" {
		t.Fatalf("service root links no Managers: %v", root)
	}
	sys := decode(t, do(t, "GET", e.URL()+"/redfish/v1/Systems/node-02", "admin", pw, ""))
	mgr := sys["Links"].(map[string]any)["ManagedBy"].([]any)[0].(map[string]any)["@odata.id"].(string)
	if mgr != "/redfish/v1/Managers/node-02" {
		t.Fatalf("ManagedBy = %s", mgr)
	}
	if sys["VirtualMedia"].(map[string]any)["@odata.id"] != "/redfish/v1/Systems/node-02/VirtualMedia" {
		t.Errorf("system links no VirtualMedia: %v", sys["VirtualMedia"])
	}
	coll := decode(t, do(t, "GET", e.URL()+"/redfish/v1/Managers", "admin", pw, ""))
	if coll["Members@odata.count"].(float64) != 2 {
		t.Errorf("managers: %v", coll)
	}
	m := decode(t, do(t, "GET", e.URL()+mgr, "admin", pw, ""))
	if m["ManagerType"] != "BMC" || m["VirtualMedia"].(map[string]any)["@odata.id"] != mgr+"/VirtualMedia" {
		t.Fatalf("manager: %v", m)
	}
	for _, base := range []string{mgr + "/VirtualMedia", "/redfish/v1/Systems/node-02/VirtualMedia"} {
		vc := decode(t, do(t, "GET", e.URL()+base, "admin", pw, ""))
		if vc["Members"].([]any)[0].(map[string]any)["@odata.id"] != base+"/Cd" {
			t.Fatalf("%s: %v", base, vc)
		}
		cd := decode(t, do(t, "GET", e.URL()+base+"/Cd", "admin", pw, ""))
		if cd["Inserted"] != false || cd["Image"] != "" || cd["ConnectedVia"] != "NotConnected" {
			t.Errorf("empty drive: %v", cd)
		}
		if mt := cd["MediaTypes"].([]any); len(mt) != 2 || mt[0] != "CD" || mt[1] != "DVD" {
			t.Errorf("MediaTypes = %v", mt)
		}
		acts := cd["Actions"].(map[string]any)
		if acts["#VirtualMedia.InsertMedia"].(map[string]any)["target"] != base+"/Cd/Actions/VirtualMedia.InsertMedia" ||
			acts["#VirtualMedia.EjectMedia"].(map[string]any)["target"] != base+"/Cd/Actions/VirtualMedia.EjectMedia" {
			t.Errorf("actions: %v", acts)
		}
	}
	// another machine's credentials are not enough, none at all neither
	if r := do(t, "GET", e.URL()+mgr+"/VirtualMedia/Cd", "", "", ""); r.status != 401 {
		t.Errorf("no credentials: %d", r.status)
	}
	if r := do(t, "GET", e.URL()+mgr+"/VirtualMedia/Floppy", "admin", pw, ""); r.status != 404 {
		t.Errorf("unknown device: %d", r.status)
	}
	if r := do(t, "DELETE", e.URL()+mgr+"/VirtualMedia/Cd", "admin", pw, ""); r.status != 405 {
		t.Errorf("DELETE: %d", r.status)
	}
}

// TestVirtualMediaInsertEject: InsertMedia downloads the image into the
// state directory; the drive shows it on both paths; eject removes it; a
// URL the BMC cannot fetch is an error and leaves the drive empty; PATCH
// inserts and ejects too.
func TestVirtualMediaInsertEject(t *testing.T) {
	iso := bytes.Repeat([]byte("ISO9660!"), 4096)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/boot-1.iso" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(iso)
	}))
	defer img.Close()
	e := start(t, bmcemu.Config{Count: 1, StateDir: t.TempDir()})
	cd := e.URL() + "/redfish/v1/Managers/node-01/VirtualMedia/Cd"
	insert := cd + "/Actions/VirtualMedia.InsertMedia"

	if r := do(t, "POST", insert, "admin", pw, `{"Image": "`+img.URL+`/boot-1.iso", "Inserted": true, "WriteProtected": true}`); r.status != 204 {
		t.Fatalf("InsertMedia: %d %s", r.status, r.body)
	}
	md := e.Machine("node-01").Media()
	got, err := os.ReadFile(md.File)
	if err != nil || !bytes.Equal(got, iso) {
		t.Fatalf("downloaded image %s: %v (%d bytes, want %d)", md.File, err, len(got), len(iso))
	}
	if !strings.HasPrefix(md.File, e.StateDir()) {
		t.Errorf("image %s is outside the state directory %s", md.File, e.StateDir())
	}
	for _, p := range []string{cd, e.URL() + "/redfish/v1/Systems/node-01/VirtualMedia/Cd"} {
		v := decode(t, do(t, "GET", p, "admin", pw, ""))
		if v["Inserted"] != true || v["Image"] != img.URL+"/boot-1.iso" || v["ImageName"] != "boot-1.iso" ||
			v["WriteProtected"] != true || v["ConnectedVia"] != "URI" {
			t.Errorf("%s after insert: %v", p, v)
		}
	}
	if r := do(t, "POST", cd+"/Actions/VirtualMedia.EjectMedia", "admin", pw, `{}`); r.status != 204 {
		t.Fatalf("EjectMedia: %d %s", r.status, r.body)
	}
	if v := decode(t, do(t, "GET", cd, "admin", pw, "")); v["Inserted"] != false || v["Image"] != "" {
		t.Errorf("after eject: %v", v)
	}
	if _, err := os.Stat(md.File); !os.IsNotExist(err) {
		t.Errorf("ejected image still on disk: %v", err)
	}

	// a URL the BMC cannot fetch: an error answer, nothing inserted
	for _, u := range []string{img.URL + "/missing.iso", "http://127.0.0.1:1/x.iso"} {
		r := do(t, "POST", insert, "admin", pw, `{"Image": "`+u+`"}`)
		if r.status != 500 || !strings.Contains(r.body, u) {
			t.Errorf("InsertMedia %s: %d %s, want 500 naming the URL", u, r.status, r.body)
		}
		if v := decode(t, do(t, "GET", cd, "admin", pw, "")); v["Inserted"] != false {
			t.Errorf("after a failed insert: %v", v)
		}
	}
	for _, body := range []string{`{}`, `{"Image": "ftp://127.0.0.1/x.iso"}`, `{"Image": "x", "Inserted": false}`, `nope`} {
		if r := do(t, "POST", insert, "admin", pw, body); r.status != 400 {
			t.Errorf("InsertMedia %s: %d %s, want 400", body, r.status, r.body)
		}
	}

	// PATCH Image inserts (BMCs without the action), Inserted false ejects
	if r := do(t, "PATCH", cd, "admin", pw, `{"Image": "`+img.URL+`/boot-1.iso", "Inserted": true}`); r.status != 204 {
		t.Fatalf("PATCH Image: %d %s", r.status, r.body)
	}
	if !e.Machine("node-01").Media().Inserted {
		t.Error("PATCH Image did not insert")
	}
	if r := do(t, "PATCH", cd, "admin", pw, `{"Inserted": false}`); r.status != 204 {
		t.Fatalf("PATCH Inserted false: %d %s", r.status, r.body)
	}
	if md := e.Machine("node-01").Media(); md.Inserted || md.Image != "" {
		t.Errorf("PATCH Inserted false left %+v", md)
	}
	if r := do(t, "PATCH", cd, "admin", pw, `{}`); r.status != 400 {
		t.Errorf("empty PATCH: %d", r.status)
	}

	// the fail_insert_media knob: a broken media service answers 500
	if r := do(t, "PATCH", e.URL()+"/emulator/machines/node-01", "", "", `{"fail_insert_media": true}`); r.status != 200 ||
		!strings.Contains(r.body, `"fail_insert_media":true`) {
		t.Fatalf("knob: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", insert, "admin", pw, `{"Image": "`+img.URL+`/boot-1.iso"}`); r.status != 500 {
		t.Errorf("InsertMedia with fail_insert_media: %d %s", r.status, r.body)
	}
	if e.Machine("node-01").Media().Inserted {
		t.Error("inserted despite fail_insert_media")
	}
}

// TestBootOverrideCd: the override targets include Cd, Once is consumed by
// the next boot and Continuous is not.
func TestBootOverrideCd(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}`); r.status != 204 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	m := e.Machine("node-01")
	if err := m.SetPower(true); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); st.BootTarget != bmcemu.BootNone || st.BootEnabled != bmcemu.OverrideDisabled {
		t.Errorf("Once override after a boot: %s %s", st.BootTarget, st.BootEnabled)
	}
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Continuous"}}`); r.status != 204 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType": "ForceRestart"}`); r.status != 204 {
		t.Fatalf("reset: %d", r.status)
	}
	if st := m.Status(); st.BootTarget != bmcemu.BootCd || st.BootEnabled != bmcemu.OverrideContinuous || st.Boots != 2 {
		t.Errorf("Continuous override after a reset: %+v", st)
	}
}
