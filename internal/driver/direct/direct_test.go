package direct

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

func TestImageInfo(t *testing.T) {
	sha256 := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		info     model.JSON
		allowMD5 bool
		algo     string
		wantErr  string
	}{
		{name: "sha256 by length", info: model.JSON{"image_source": "http://127.0.0.1/i", "image_checksum": sha256}, algo: "sha256"},
		{name: "sha512 by length", info: model.JSON{"image_source": "/tmp/i", "image_checksum": strings.Repeat("a", 128)}, algo: "sha512"},
		{name: "os hash", info: model.JSON{"image_source": "/tmp/i", "image_os_hash_algo": "SHA512", "image_os_hash_value": strings.Repeat("a", 128)}, algo: "sha512"},
		{name: "md5 refused", info: model.JSON{"image_source": "/tmp/i", "image_checksum": strings.Repeat("a", 32)}, wantErr: "md5"},
		{name: "md5 allowed", info: model.JSON{"image_source": "/tmp/i", "image_checksum": strings.Repeat("a", 32)}, allowMD5: true, algo: "md5"},
		{name: "no source", info: model.JSON{"image_checksum": sha256}, wantErr: "image_source is required"},
		{name: "no checksum", info: model.JSON{"image_source": "/tmp/i"}, wantErr: "image_checksum"},
		{name: "odd length", info: model.JSON{"image_source": "/tmp/i", "image_checksum": "abcd"}, wantErr: "no supported algorithm"},
		{name: "not hex", info: model.JSON{"image_source": "/tmp/i", "image_checksum": strings.Repeat("z", 64)}, wantErr: "not hexadecimal"},
		{name: "unknown algo", info: model.JSON{"image_source": "/tmp/i", "image_os_hash_algo": "crc32", "image_os_hash_value": "abcd"}, wantErr: "unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := imageInfo(&model.Node{InstanceInfo: tt.info}, tt.allowMD5)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || p["image_info"].(map[string]any)["os_hash_algo"] != tt.algo {
				t.Fatalf("params = %v, err = %v; want algo %s", p, err, tt.algo)
			}
		})
	}
}

// TestClientNeverShowsToken: the token travels in the query (IPA's place),
// and no error text carries it: not a refused connection's, not an HTTP
// error's.
func TestClientNeverShowsToken(t *testing.T) {
	const token = "TOKEN-5ecret-in-query"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("agent_token") != token {
			t.Errorf("token not in the query: %q", r.URL.RawQuery)
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"faultcode":"Client","faultstring":"401 Unauthorized: Token invalid."}`))
	}))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	c := NewClient()
	for _, u := range []string{srv.URL, closed.URL} {
		_, err := c.Run(context.Background(), u, token, ipa.CmdSync, nil, false)
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "agent_token") {
			t.Errorf("Run against %s: err = %v", u, err)
		}
		_, err = c.Status(context.Background(), u, token, "id")
		if err == nil || strings.Contains(err.Error(), token) {
			t.Errorf("Status against %s: err = %v", u, err)
		}
	}
	srv.Close()
}

// TestFailedCommandSavesLogs: when the agent's prepare_image fails, the
// agent's logs (log.collect_system_logs) are saved to LogsDir, and the
// failure says where, with IPA's error details.
func TestFailedCommandSavesLogs(t *testing.T) {
	logs := []byte("\x1f\x8b fake tarball")
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ipa.CommandRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		res := ipa.CommandResult{ID: "c", Status: ipa.StatusSucceeded}
		switch req.Name {
		case ipa.CmdPrepareImage:
			res.Status, res.Error = ipa.StatusFailed, &ipa.RESTError{Type: "ImageDownloadError", Code: 500,
				Message: "Error downloading image", Details: "HTTP 404"}
		case ipa.CmdCollectSystemLogs:
			if r.URL.Query().Get("wait") != "true" {
				t.Errorf("collect_system_logs without wait=true")
			}
			res.Result = map[string]any{"system_logs": base64.StdEncoding.EncodeToString(logs)}
		default:
			t.Errorf("unexpected command %s", req.Name)
		}
		_ = json.NewEncoder(w).Encode(res)
	}))
	defer agent.Close()
	dir := t.TempDir()
	d := New(Config{LogsDir: dir})
	n := &model.Node{UUID: "n1", InstanceInfo: model.JSON{"image_source": "http://127.0.0.1:1/i", "image_checksum": strings.Repeat("ab", 32)},
		DriverInternalInfo: model.JSON{ipa.KeyURL: agent.URL, ipa.KeyToken: "tok"}}
	_, err := d.Continue(context.Background(), &driver.Task{Node: n}, string(driver.DeploySteps))
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "the agent's logs are in "+dir) {
		t.Fatalf("err = %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "n1_deploy_*.tar.gz"))
	if len(files) != 1 {
		t.Fatalf("saved logs = %v", files)
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Equal(b, logs) {
		t.Fatalf("saved logs = %q", b)
	}
}

// TestDeployFinishedAfterContinue: the heartbeat that finds the image
// written and synced does not reboot the machine (the node is still
// waiting); FinishStep, called once the conductor saved the resume, boots
// it from disk and forgets the agent. The custom agent's deploy steps and
// a deploy not yet synced are not rebooted by it.
func TestDeployFinishedAfterContinue(t *testing.T) {
	var names []string
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ipa.CommandRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		names = append(names, req.Name)
		_ = json.NewEncoder(w).Encode(ipa.CommandResult{ID: "c-" + req.Name, Status: ipa.StatusSucceeded, Result: map[string]any{}})
	}))
	defer agent.Close()
	d := New(Config{})
	newNode := func() *model.Node {
		return &model.Node{UUID: "n1", InstanceInfo: model.JSON{"image_source": "http://127.0.0.1:1/i", "image_checksum": strings.Repeat("ab", 32)},
			DriverInternalInfo: model.JSON{ipa.KeyURL: agent.URL, ipa.KeyToken: "tok"}}
	}
	deploy := string(driver.DeploySteps)
	n := newNode()
	task := &driver.Task{Node: n, Driver: &driver.Driver{}}
	if err := d.FinishStep(context.Background(), task, deploy); err != nil || n.DriverInternalInfo[ipa.KeyURL] == nil {
		t.Fatalf("FinishStep before the image is synced: err %v, agent %v", err, n.DriverInternalInfo[ipa.KeyURL])
	}
	for i := 0; i < 5; i++ { // one command a heartbeat may be started and polled
		res, err := d.Continue(context.Background(), task, deploy)
		if err != nil {
			t.Fatal(err)
		}
		if res == driver.Done {
			break
		}
	}
	if n.DriverInternalInfo[ipa.KeyURL] == nil || names[len(names)-1] != ipa.CmdSync {
		t.Fatalf("after Continue found the deploy done: commands %v, agent %v (rebooted away before the resume was saved)",
			names, n.DriverInternalInfo[ipa.KeyURL])
	}
	custom := newNode()
	custom.DriverInternalInfo[keyDeployPhase] = ipa.CmdPrepareImage
	if err := d.CustomAgent().FinishStep(context.Background(), &driver.Task{Node: custom, Driver: &driver.Driver{}}, deploy); err != nil ||
		custom.DriverInternalInfo[ipa.KeyURL] == nil {
		t.Fatalf("the custom agent's FinishStep: err %v, agent %v", err, custom.DriverInternalInfo[ipa.KeyURL])
	}
	if err := d.FinishStep(context.Background(), task, deploy); err != nil {
		t.Fatal(err)
	}
	if n.DriverInternalInfo[ipa.KeyURL] != nil || n.DriverInternalInfo[ipa.KeyToken] != nil || n.PowerState != "" {
		// no power interface here: only the agent is forgotten
		t.Fatalf("after FinishStep: %v, power %q", n.DriverInternalInfo, n.PowerState)
	}
}
