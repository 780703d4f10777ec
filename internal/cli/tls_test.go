package cli

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// TestCACert: an https endpoint is reached with --os-cacert naming its CA,
// and refused without it.
func TestCACert(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"name": "n1"}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ca   string
		ok   bool
		what string
	}{{ca, true, "with its CA"}, {"", false, "without its CA"}} {
		tr, err := tlsTransport(tlsconf.Client{CAFile: c.ca})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewClient(ClientConfig{Endpoint: srv.URL, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		err = cl.Get(t.Context(), "/v1/nodes/n1", nil, &out)
		if c.ok && (err != nil || out["name"] != "n1") {
			t.Errorf("%s: %v %v", c.what, out, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "certificate")) {
			t.Errorf("%s: %v, want a certificate error", c.what, err)
		}
	}
	if _, err := tlsTransport(tlsconf.Client{CAFile: filepath.Join(t.TempDir(), "none.pem")}); err == nil {
		t.Error("a missing CA file was accepted")
	}
}
