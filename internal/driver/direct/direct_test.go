package direct

import (
	"strings"
	"testing"

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
