package disk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

// readConfigDrive opens the ISO at offset of the file p and returns its
// label and the files it holds under openstack/latest.
func readConfigDrive(t *testing.T, p string, offset, size int64) (string, map[string]string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs, err := iso9660.Read(file.New(f, true), size, offset, 2048)
	if err != nil {
		t.Fatalf("reading the config drive as ISO 9660: %v", err)
	}
	files := map[string]string{}
	ents, err := fs.ReadDir("openstack/latest")
	if err != nil {
		t.Fatalf("openstack/latest: %v", err)
	}
	for _, e := range ents {
		b, err := fs.ReadFile("openstack/latest/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return fs.Label(), files
}

func TestBuildConfigDrive(t *testing.T) {
	cd := ConfigDrive{
		MetaData:    map[string]any{"uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "hostname": "node-1"},
		UserData:    "#cloud-config\nhostname: node-1\n",
		NetworkData: map[string]any{"links": []any{}},
		VendorData:  map[string]any{"cloud-init": "x"},
	}
	iso, err := BuildConfigDrive(cd, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cd.iso")
	if err := os.WriteFile(p, iso, 0o644); err != nil {
		t.Fatal(err)
	}
	label, files := readConfigDrive(t, p, 0, int64(len(iso)))
	if label != ConfigDriveLabel+strings.Repeat(" ", 32-len(ConfigDriveLabel)) {
		t.Errorf("volume identifier %q, want config-2 padded with spaces", label)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(files["meta_data.json"]), &meta); err != nil || meta["hostname"] != "node-1" {
		t.Errorf("meta_data.json = %q (%v)", files["meta_data.json"], err)
	}
	if files["user_data"] != cd.UserData {
		t.Errorf("user_data = %q", files["user_data"])
	}
	if files["network_data.json"] != `{"links":[]}` || files["vendor_data2.json"] != `{"cloud-init":"x"}` {
		t.Errorf("network/vendor data: %q", files)
	}
	// blkid (util-linux, independent of go-diskfs) sees an iso9660 labelled config-2.
	if blkid, err := exec.LookPath("blkid"); err == nil {
		out, err := exec.Command(blkid, "-p", "-o", "export", p).Output()
		if err != nil || !strings.Contains(string(out), "TYPE=iso9660") || !strings.Contains(string(out), "LABEL=config-2") {
			t.Errorf("blkid: %s %v", out, err)
		}
	}
}

func TestFetchConfigDrive(t *testing.T) {
	iso, err := BuildConfigDrive(ConfigDrive{MetaData: map[string]any{"uuid": "u"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	enc := EncodeConfigDrive(iso)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cd" {
			_, _ = w.Write([]byte(enc))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, src := range []string{enc, srv.URL + "/cd"} {
		got, err := FetchConfigDrive(ctx, srv.Client(), src)
		if err != nil || string(got) != string(iso) {
			t.Fatalf("FetchConfigDrive(%.20q) = %d bytes, %v", src, len(got), err)
		}
	}
	for _, bad := range []string{"not base64!", "aGVsbG8=", srv.URL + "/missing"} {
		if _, err := FetchConfigDrive(ctx, srv.Client(), bad); err == nil {
			t.Errorf("FetchConfigDrive(%q) accepted", bad)
		}
	}
}
