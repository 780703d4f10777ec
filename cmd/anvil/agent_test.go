package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// `anvil agent --once` looks up once: found, it says which node and exits
// 0; not found or unreachable, it fails with the reason, the MACs and the
// API URL in one line (main prints it and exits 1).
func TestAgentOnce(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("addresses") != "52:54:00:00:00:01" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node could not be found.\", \"debuginfo\": null}"}`))
			return
		}
		var lr ipa.LookupResponse
		lr.Node.UUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
		lr.Config.AgentToken = "0123456789abcdef0123456789abcdef"
		_ = json.NewEncoder(w).Encode(lr)
	}))
	defer api.Close()
	down := "http://" + testbin.RefusedAddr(t)
	dir := t.TempDir()
	cmdline := filepath.Join(dir, "cmdline")
	if err := os.WriteFile(cmdline, []byte("console=ttyS0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(dir, "disk")
	if err := os.WriteFile(disk, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url, mac string
		ok             bool
		want           []string
	}{
		{"found", api.URL, "52:54:00:00:00:01", true, []string{"found node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}},
		{"no node", api.URL, "52:54:00:00:00:99", false, []string{"lookup of 52:54:00:00:00:99 on " + api.URL + " failed: HTTP 404", "Node could not be found."}},
		{"wrong API URL", down, "52:54:00:00:00:01", false, []string{"lookup of 52:54:00:00:00:01 on " + down + " failed: API unreachable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := newRoot(&stdout, &stderr)
			root.SetArgs([]string{"agent", "--once", "--api-url", tc.url, "--mac", tc.mac, "--cmdline", cmdline,
				"--root-dir", dir, "--disk", disk})
			err := root.Execute()
			if tc.ok != (err == nil) {
				t.Fatalf("err %v; stdout %s; stderr %s", err, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if err != nil {
				out = err.Error()
				if strings.Contains(out, "\n") {
					t.Errorf("reason is not one line: %q", out)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q lacks %q", out, w)
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "agent started") {
				t.Error("--once started the agent")
			}
		})
	}
}
