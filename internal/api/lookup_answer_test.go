package api

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// lookupAnswerGolden pins the bytes of GET /v1/lookup's answers.
var lookupAnswerGolden = filepath.Join("testdata", "lookup-answer.json")

// TestLookupAnswerBytes: the lookup answer, byte for byte — the key
// order, Python's separators and string escapes, the secrets of
// instance_info and driver_internal_info masked (configdrive, image_url,
// credentials in keys, URLs and strings, nested and in lists), the
// inspection data left out, the token handed out once and masked after.
// The node carries the values whose rendering is easiest to change
// (non-ASCII, '&', '<', floats, nulls, empty and nested objects).
func TestLookupAnswerBytes(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("agent"))
	n.ProvisionState = "clean wait"
	n.Properties = model.JSON{"cpus": 8, "memory_mb": 16384, "local_gb": 99, "cpu_arch": "x86_64",
		"capabilities": "boot_mode:uefi,secure_boot:true", "vendor": "Caf\u00e9 <&> \u2603", "ratio": 0.25,
		"root_device": map[string]any{"serial": "S1", "size": map[string]any{}}, "list": []any{1, "a", nil, true, 1.5}}
	n.InstanceInfo = model.JSON{"image_source": "http://127.0.0.1:8080/img.raw?a=1&b=<2>",
		"image_url": "http://127.0.0.1:8080/temp-url", "configdrive": "H4sIAAAA", "image_checksum": "abc",
		"root_gb": 10, "empty_url": "", "kernel_append_params": "console=ttyS0 password=hunter2",
		"nested":            map[string]any{"password": "p", "ok": "v", "list": []any{"token=abc def", map[string]any{"secret": 1}}},
		"image_disk_format": nil}
	n.DriverInternalInfo = model.JSON{inventoryKey: map[string]any{"cpu": map[string]any{"count": 8}},
		pluginDataKey: map[string]any{"logs": "x"}, "agent_url": "http://user:pw@127.0.0.1:9999",
		"deploy_steps": []any{map[string]any{"step": "write_image", "args": map[string]any{"token": "t", "n": 2}}},
		"clean_steps":  nil, "is_whole_disk_image": true, "agent_bytes_written": 123456789012, "bmc_password": []any{"a"}}
	if err := e.st.Nodes().UpdateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	// A second node: an empty image_url is not masked (Ironic masks it
	// when it holds a value), an empty configdrive is; nothing else set.
	n2 := e.mustNode(nodeFixture("agent-2"))
	n2.ProvisionState = "clean wait"
	n2.InstanceInfo = model.JSON{"image_url": "", "configdrive": ""}
	if err := e.st.Nodes().UpdateNode(t.Context(), n2); err != nil {
		t.Fatal(err)
	}
	const mac, mac2 = "52:54:00:12:34:57", "52:54:00:12:34:58"
	for m, node := range map[string]string{mac: n.UUID, mac2: n2.UUID} {
		if err := e.st.Ports().CreatePort(t.Context(), &model.Port{NodeUUID: node, Address: m}); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	for i, m := range []string{mac, mac, mac2} { // the token, then the token masked
		rec := e.do("GET", "/v1/lookup?addresses="+m, "", latest)
		if rec.Code != 200 {
			t.Fatalf("lookup %d: %d %s", i, rec.Code, rec.Body)
		}
		body := rec.Body.String()
		var lr struct {
			Config struct {
				AgentToken string `json:"agent_token"`
			} `json:"config"`
		}
		if err := json.Unmarshal([]byte(body), &lr); err != nil {
			t.Fatal(err)
		}
		if tok := lr.Config.AgentToken; tok != "******" {
			body = strings.ReplaceAll(body, tok, "TOKEN") // random
		}
		got.WriteString(strings.NewReplacer(n.UUID, "NODE", n2.UUID, "NODE2").Replace(body))
		got.WriteByte('\n')
	}
	want, err := os.ReadFile(lookupAnswerGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("lookup answers changed:\n got %s\nwant %s", got.Bytes(), want)
	}
}
