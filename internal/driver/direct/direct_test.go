package direct

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
