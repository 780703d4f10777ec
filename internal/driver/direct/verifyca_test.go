package direct

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
)

// IPA (≥ 6.3, API ≥ 1.68) serves its command API over TLS with a
// certificate it generates at boot and sends in the heartbeat's
// agent_verify_ca: the conductor must reach it verifying with that
// certificate, and refuse an agent whose certificate is not the one sent.
func TestCommandsVerifyAgentCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "command_name": "sync",
			"command_status": "SUCCEEDED", "command_result": nil, "command_error": nil})
	}))
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	otherCA := selfSigned(t) // httptest's servers all share one certificate

	node := func(ca string) *model.Node {
		info := model.JSON{ipa.KeyURL: srv.URL, ipa.KeyToken: "tok"}
		if ca != "" {
			info[ipa.KeyVerifyCA] = ca
		}
		return &model.Node{UUID: "n1", DriverInternalInfo: info}
	}
	c := NewClient()
	if _, done, err := runCommand(context.Background(), c, node(ca), ipa.CmdSync, nil); err != nil || !done {
		t.Fatalf("with the agent's own certificate: done=%v err=%v", done, err)
	}
	for name, bad := range map[string]string{"no agent_verify_ca (system roots)": "", "another certificate": otherCA} {
		_, _, err := runCommand(context.Background(), c, node(bad), ipa.CmdSync, nil)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: err = %v, want a certificate verification error", name, err)
		}
	}
	if _, _, err := runCommand(context.Background(), c, node("not a certificate"), ipa.CmdSync, nil); err == nil ||
		!strings.Contains(err.Error(), "agent_verify_ca") {
		t.Errorf("garbage agent_verify_ca: err = %v", err)
	}
}

// selfSigned returns the PEM of a fresh self-signed certificate for
// 127.0.0.1, as IPA generates one.
func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
