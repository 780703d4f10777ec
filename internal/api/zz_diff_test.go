package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

var uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func summarize(code int, body string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	if s, ok := m["error_message"].(string); ok {
		var inner map[string]any
		if json.Unmarshal([]byte(s), &inner) == nil {
			if fs, ok := inner["faultstring"]; ok {
				body = "F:" + fs.(string)
			} else {
				body = "W:" + inner["description"].(string)
			}
		}
	} else if len(body) > 150 {
		body = body[:150]
	}
	return uuidRe.ReplaceAllString(strings.TrimSpace(http.StatusText(code)+" "+body), "U")
}

func TestZZDiff(t *testing.T) {
	if os.Getenv("ZZDIFF") == "" {
		t.Skip()
	}
	e := newEnv(t)
	e.createNode(`{"driver":"fake-hardware","name":"n1"}`)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	raw, _ := os.ReadFile("/tmp/diffcases.txt")
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, " ", 4)
		ver, method, path, body := parts[0], parts[1], parts[2], ""
		if len(parts) == 4 {
			body = parts[3]
		}
		var res [2]string
		for i, base := range []string{"http://127.0.0.1:6399", srv.URL} {
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if ver != "-" {
				req.Header.Set("X-OpenStack-Ironic-API-Version", ver)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res[i] = summarize(resp.StatusCode, string(b))
		}
		mark := "  "
		if res[0] != res[1] {
			mark = "!!"
		}
		t.Logf("%s %s %s %s\n    ironic: %s\n    anvil:  %s", mark, ver, method, path+" "+body, res[0], res[1])
	}
}
