package server

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewBoot(t *testing.T) {
	if _, _, _, err := newBoot(BootConfig{HTTPURL: "http://10.0.2.100:6385", Root: t.TempDir()}, nil); err == nil {
		t.Error("an --http-url without a path was accepted (it would shadow the API)")
	}
	pub, prefix, h, err := newBoot(BootConfig{HTTPURL: "http://10.0.2.100:6385/boot/", Root: t.TempDir(),
		PublicEndpoint: "http://10.0.2.100:6385"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "/boot" {
		t.Errorf("prefix = %q, want /boot", prefix)
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, body := get("/boot/boot.ipxe"); code != 200 || !strings.Contains(body, "chain http://10.0.2.100:6385/boot/mac/") {
		t.Errorf("GET /boot/boot.ipxe: %d %s", code, body)
	}
	if code, _ := get("/boot/mac/52-54-00-00-00-01"); code != 404 {
		t.Errorf("unknown MAC: %d", code)
	}
	if err := pub.PublishLocalBoot(context.Background(), "node-1", []string{"52:54:00:00:00:01"}); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/boot/mac/52-54-00-00-00-01"); code != 200 || !strings.Contains(body, "#!ipxe") {
		t.Errorf("published MAC: %d %s", code, body)
	}
	if err := pub.Withdraw(context.Background(), "node-1"); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/boot/mac/52-54-00-00-00-01"); code != 404 {
		t.Errorf("withdrawn MAC: %d", code)
	}
}
