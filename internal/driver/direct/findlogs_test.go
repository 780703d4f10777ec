package direct

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func tarball(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o600, Size: 2}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("ok"))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// TestFindLogs: the newest tarball of the node saved since the operation
// began is found with its members; older ones, other nodes' and the modes
// that collect nothing say why there is none.
func TestFindLogs(t *testing.T) {
	dir := t.TempDir()
	const node = "9a0f1e3c-0000-4000-8000-000000000001"
	since := time.Now().Add(-time.Minute)
	write := func(name string, mod time.Time, members ...string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, tarball(t, members...), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mod, mod)
	}
	write(node+"_deploy_2026-12-06-01-00-00.tar.gz", since.Add(-time.Hour), "old.log")
	write("other_deploy_2026-12-06-03-00-00.tar.gz", since.Add(30*time.Second), "other.log")
	write(node+"_deploy_2026-12-06-03-00-00.tar.gz", since.Add(20*time.Second), "journal", "dmesg", "ip_addr")

	got := FindLogs(dir, "", node, since)
	if got.Collect != CollectOnFailure || !strings.HasSuffix(got.Path, node+"_deploy_2026-12-06-03-00-00.tar.gz") ||
		!slices.Equal(got.Files, []string{"journal", "dmesg", "ip_addr"}) || got.Bytes == 0 || got.Note != "" {
		t.Fatalf("FindLogs = %+v", got)
	}
	if got := FindLogs(dir, CollectOnFailure, node, since.Add(time.Minute)); got.Path != "" || !strings.Contains(got.Note, "no agent logs were saved") {
		t.Errorf("nothing since: %+v", got)
	}
	if got := FindLogs(dir, CollectNever, node, since); got.Path != "" || !strings.Contains(got.Note, "never") {
		t.Errorf("never: %+v", got)
	}
	if got := FindLogs("", CollectAlways, node, since); got.Path != "" || !strings.Contains(got.Note, "deploy_logs_local_path") {
		t.Errorf("no directory: %+v", got)
	}
	for _, c := range []struct {
		cfg            Config
		failed, wanted bool
	}{
		{Config{LogsDir: dir}, true, true}, {Config{LogsDir: dir}, false, false},
		{Config{LogsDir: dir, LogsCollect: CollectAlways}, false, true},
		{Config{LogsDir: dir, LogsCollect: CollectNever}, true, false},
		{Config{LogsCollect: CollectAlways}, true, false},
	} {
		if c.cfg.collects(c.failed) != c.wanted {
			t.Errorf("%+v collects(failed=%v) = %v", c.cfg, c.failed, !c.wanted)
		}
	}
	if CheckCollect("sometimes") == nil || CheckCollect("always") != nil {
		t.Error("CheckCollect")
	}
}
