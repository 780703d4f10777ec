package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/pkg/events"
)

// TestSecretsNeverShown runs a node through its lifecycle with a
// distinctive secret ("Zq9...") in every secret-bearing field and greps
// every response, log line (at debug), streamed event and metric for it.
func TestSecretsNeverShown(t *testing.T) {
	var logs syncBuffer
	s := serveWith(t, func(c *Config) {
		c.Log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var stream syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	streamDone := make(chan struct{})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+events.StreamPath, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(&stream, resp.Body); resp.Body.Close(); close(streamDone) }()

	var answers strings.Builder
	call := func(method, path, body string, want int) {
		t.Helper()
		st, raw := request(t, http.DefaultClient, s.base, method, path, "", "", "", body)
		answers.WriteString(raw)
		if st != want {
			t.Fatalf("%s %s: %d %s", method, path, st, raw)
		}
	}
	call("POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "sec", "driver_info": {
		"ipmi_password": "Zq9-ipmi", "snmp_priv_key": "Zq9-snmp",
		"kernel_append_params": "nofb password=Zq9-kernel vga=normal",
		"redfish_address": "https://bmc.example/redfish?password=Zq9-query",
		"deploy_kernel": "http://user:Zq9-urlcred@images.example/k"},
		"instance_info": {"image_source": "http://img.example/i", "image_url": "http://x/?temp_url_sig=1", "configdrive": "Zq9-ii-configdrive"}}`, 201)
	call("PATCH", "/v1/nodes/sec", `[{"op": "add", "path": "/driver_info/ipmi_password", "value": "Zq9-patched"}]`, 200)
	// A failing operation is quoted in the error: not its secret value.
	call("PATCH", "/v1/nodes/sec", `[{"op": "replace", "path": "/driver_info/none/ipmi_password", "value": "Zq9-badpatch"}]`, 400)
	call("PATCH", "/v1/nodes/sec", `[{"op": "replace", "path": "/driver_info/none/x", "value": "password=Zq9-badvalue"}]`, 400)
	for _, verb := range []string{"manage", "provide"} {
		call("PUT", "/v1/nodes/sec/states/provision", `{"target": "`+verb+`"}`, 202)
		s.wait("sec", map[string]string{"manage": fsm.Manageable, "provide": fsm.Available}[verb])
	}
	call("PUT", "/v1/nodes/sec/states/provision", `{"target": "active", "configdrive": {"meta_data": {"admin_pass": "Zq9-cdpass"}, "user_data": "Zq9-userdata"}}`, 202)
	s.wait("sec", fsm.Active)
	for _, p := range []string{"/v1/nodes/sec", "/v1/nodes/detail", "/v1/nodes?fields=driver_info,instance_info,extra,last_error",
		"/v1/nodes/sec/states", "/v1/nodes/sec/history"} {
		call("GET", p, "", 200)
	}
	st, metrics := request(t, http.DefaultClient, s.base, "GET", "/metrics", "", "", "", "")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	s.shutdown()
	cancel()
	<-streamDone

	for name, text := range map[string]string{"responses": answers.String(), "logs": logs.String(),
		"events": stream.String(), "metrics": metrics} {
		if i := strings.Index(text, "Zq9"); i >= 0 {
			t.Errorf("a secret in the %s: ...%s...", name, text[max(0, i-120):min(len(text), i+40)])
		}
	}
	// The masking must not have hidden everything: the fields are there.
	if !strings.Contains(answers.String(), `"ipmi_password": "******"`) || !strings.Contains(answers.String(), "nofb password=******") {
		t.Errorf("responses lack the masked fields:\n%.2000s", answers.String())
	}
	if !strings.Contains(logs.String(), `"msg":"audit"`) {
		t.Error("no audit record in the logs")
	}
}
