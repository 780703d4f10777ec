package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// TestFileURLAllowedPaths: end to end through the API and the real boot
// service with the default --file-url-allowed-paths (the boot root's
// images directory), a node whose deploy kernel or ramdisk names a local
// file outside it (/etc/shadow, a file next to the database, a link out of
// the images directory, a ".." path) fails its deploy with a last_error
// naming the option, and nothing under /boot ever serves such a file; a
// node whose images are in the allowed directory boots them (issue 21,
// item 1).
func TestFileURLAllowedPaths(t *testing.T) {
	root := t.TempDir()
	private := t.TempDir() // where the database would be
	images := filepath.Join(root, "images")
	if err := os.MkdirAll(images, 0o700); err != nil {
		t.Fatal(err)
	}
	const leak = "PRIVATE-DB-CONTENT-5521"
	dbFile := filepath.Join(private, "anvil.db")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(dbFile, leak)
	write(filepath.Join(images, "vmlinuz"), "good-kernel-bytes")
	write(filepath.Join(images, "initrd"), "good-ramdisk-bytes")
	if err := os.Symlink(dbFile, filepath.Join(images, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, filepath.Join(images, "privdir")); err != nil {
		t.Fatal(err)
	}
	s := serveWith(t, func(c *Config) {
		c.Network = BootConfig{HTTPURL: "http://127.0.0.1:1/boot", Root: root, PublicEndpoint: "http://127.0.0.1:1"}
	})
	goodK, goodR := "file://"+filepath.Join(images, "vmlinuz"), filepath.Join(images, "initrd")
	cases := []struct {
		name, kernel, ramdisk string
	}{
		{"file:///etc/shadow", "file:///etc/shadow", goodR},
		{"the database as ramdisk", goodK, dbFile},
		{"the database as a file URL", "file://" + dbFile, goodR},
		{"a link out of the images directory", "file://" + filepath.Join(images, "escape"), goodR},
		{"a link to a directory outside", goodK, filepath.Join(images, "privdir", "anvil.db")},
		{"dot-dot out of the images directory", images + "/../../" + filepath.Base(private) + "/anvil.db", goodR},
		{"dot-dot in a file URL", "file://" + images + "/../../../../etc/passwd", goodR},
	}
	deploy := func(i int, name, kernel, ramdisk, want string) (mac string, node map[string]any) {
		t.Helper()
		mac = fmt.Sprintf("52:54:00:00:f1:%02x", i)
		body := fmt.Sprintf(`{"name":"%s","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
			"driver_info":{"deploy_kernel":%q,"deploy_ramdisk":%q},
			"instance_info":{"image_source":"http://127.0.0.1:1/img","image_checksum":"%s"}}`, name, kernel, ramdisk, strings.Repeat("ab", 32))
		n := s.do("POST", "/v1/nodes", body, 201)
		s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"`+mac+`"}`, 201)
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"manage"}`, 202)
		s.wait(name, "manageable")
		s.do("PATCH", "/v1/nodes/"+name, `[{"op":"add","path":"/automated_clean","value":false}]`, 200)
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"provide"}`, 202)
		s.wait(name, "available")
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"active"}`, 202)
		reach(t, s, name, want)
		return mac, s.do("GET", "/v1/nodes/"+name, "", 200)
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mac, n := deploy(i, fmt.Sprintf("fileurl-%d", i), c.kernel, c.ramdisk, "deploy failed")
			le, _ := n["last_error"].(string)
			if !strings.Contains(le, "--file-url-allowed-paths") || strings.Contains(le, leak) {
				t.Errorf("last_error = %q, want a refusal naming --file-url-allowed-paths", le)
			}
			if n["power_state"] == "power on" {
				t.Error("the node was powered on")
			}
			code, body := get(s.base + "/boot/mac/" + strings.ReplaceAll(mac, ":", "-"))
			if code != http.StatusNotFound {
				t.Errorf("GET /boot/mac/%s: %d %s, want 404 (nothing published)", mac, code, body)
			}
		})
	}
	// The allowed images boot: the script names them and /boot serves them.
	mac, _ := deploy(len(cases), "fileurl-good", goodK, goodR, "wait call-back")
	code, script := get(s.base + "/boot/mac/" + strings.ReplaceAll(mac, ":", "-"))
	if code != 200 {
		t.Fatalf("GET /boot/mac: %d %s", code, script)
	}
	urls := regexp.MustCompile(`http://127\.0\.0\.1:1(/boot/n/[^\s]+/(?:kernel|ramdisk))`).FindAllStringSubmatch(script, -1)
	if len(urls) != 2 {
		t.Fatalf("script names %d boot files, want kernel and ramdisk:\n%s", len(urls), script)
	}
	for _, u := range urls {
		code, body := get(s.base + u[1])
		if code != 200 || !strings.HasPrefix(body, "good-") {
			t.Errorf("GET %s: %d %q", u[1], code, body)
		}
	}
	// Nothing the boot service keeps holds the private file.
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), leak) {
			t.Errorf("%s holds the private file's content", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reach follows node on the watch stream until its provision state is
// state, resting or not (wait call-back waits with a target).
func reach(t *testing.T, s *served, node, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ch, err := events.Subscribe(ctx, s.base, events.Filter{Nodes: []string{node}, Snapshot: true,
		Fields: []string{events.FieldProvisionState, events.FieldTargetProvisionState, events.FieldReservation}})
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for e := range ch {
		if st := e.State; st != nil {
			last = st.ProvisionState
			if last == state && (events.Resting(*st) || strings.HasPrefix(state, "wait")) {
				return
			}
		}
	}
	t.Fatalf("%s never reached %s (last %s): %v", node, state, last, s.do("GET", "/v1/nodes/"+node, "", 200)["last_error"])
}

// TestFileURLAllowedPathsRefusesDatabaseDir: anvil serve does not start
// when --file-url-allowed-paths would let the boot endpoint serve the
// SQLite database.
func TestFileURLAllowedPathsRefusesDatabaseDir(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "anvil.db"), HostID: "guard-host",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownTimeout: time.Minute,
		Network: BootConfig{HTTPURL: "http://127.0.0.1:1/boot", Root: filepath.Join(dir, "boot"), FileAllowedPaths: []string{dir}},
		Ready:   func(string) { t.Error("serve started") }}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	err := Serve(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "--file-url-allowed-paths") || !strings.Contains(err.Error(), "anvil.db") {
		t.Fatalf("Serve = %v, want a refusal naming the option and the database", err)
	}
}
