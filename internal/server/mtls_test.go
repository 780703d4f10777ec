package server

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/tlsconf"
	"github.com/anvil-metal/anvil/internal/tlsconf/tlstest"
)

// TestClientCertificates: with --tls-client-ca-file the API wants a client
// certificate of that CA (besides authentication), while the public routes
// (the agent's lookup, /v1) take none; a certificate of another CA is
// refused; the anvil CLI presents one with OS_CERT/OS_KEY.
func TestClientCertificates(t *testing.T) {
	serverCA, clientCA, otherCA := tlstest.NewCA(t, "server"), tlstest.NewCA(t, "clients"), tlstest.NewCA(t, "other")
	cert, key := serverCA.Server(t)
	s := serveWith(t, func(c *Config) {
		c.Security.TLSCertFile, c.Security.TLSKeyFile = cert, key
		c.Security.TLSClientCAFile = clientCA.File
	})
	base := strings.Replace(s.base, "http://", "https://", 1)
	client := func(certFile, keyFile string) *http.Client {
		tc, err := tlsconf.Client{CAFile: serverCA.File, CertFile: certFile, KeyFile: keyFile}.Config()
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	none := client("", "")
	if st, body := request(t, none, base, "GET", "/v1/nodes", "", "", "", ""); st != http.StatusUnauthorized || !strings.Contains(body, "client certificate") {
		t.Errorf("API without a client certificate: %d %s", st, body)
	}
	if st, body := request(t, none, base, "POST", "/v1/nodes", "", "", "", `{"driver": "fake-hardware"}`); st != http.StatusUnauthorized {
		t.Errorf("a write without a client certificate: %d %s", st, body)
	}
	if st, _ := request(t, none, base, "GET", "/v1", "", "", "", ""); st != http.StatusOK {
		t.Errorf("/v1 without a client certificate: %d", st)
	}
	if st, body := request(t, none, base, "GET", "/v1/lookup?addresses=52:54:00:00:00:01", "", "", "", ""); st != http.StatusNotFound {
		t.Errorf("the agent's lookup without a client certificate: %d %s (want the lookup's own 404)", st, body)
	}
	okCert, okKey := clientCA.Client(t, "operator")
	if st, body := request(t, client(okCert, okKey), base, "GET", "/v1/nodes", "", "", "", ""); st != http.StatusOK {
		t.Errorf("API with the CA's client certificate: %d %s", st, body)
	}
	badCert, badKey := otherCA.Client(t, "intruder")
	// Go's client withholds a certificate the server's CA list does not
	// name; either way the request is refused.
	if resp, err := client(badCert, badKey).Get(base + "/v1/nodes"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a client certificate of another CA: %d", resp.StatusCode)
		}
	}
	// A client that sends it anyway fails the handshake.
	pair, err := tls.LoadX509KeyPair(badCert, badKey)
	if err != nil {
		t.Fatal(err)
	}
	forced := client("", "")
	forced.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	if resp, err := forced.Get(base + "/v1/nodes"); err == nil {
		resp.Body.Close()
		t.Errorf("a forced certificate of another CA was accepted: %d", resp.StatusCode)
	}
	if _, body := request(t, client(okCert, okKey), base, "GET", "/v1/nodes", "", "", "", ""); strings.Contains(body, "fake-hardware") {
		t.Errorf("a refused write created a node: %s", body)
	}

	// The anvil CLI with OS_CERT/OS_KEY.
	env := map[string]string{"OS_ENDPOINT": base, "OS_CACERT": serverCA.File, "OS_CERT": okCert, "OS_KEY": okKey}
	if out, errOut, err := runCLI(t, env, "node", "create", "--driver", "fake-hardware", "--name", "mtls-node"); err != nil {
		t.Fatalf("anvil node create with a client certificate: %v %s %s", err, out, errOut)
	}
	delete(env, "OS_CERT")
	delete(env, "OS_KEY")
	if _, _, err := runCLI(t, env, "node", "list"); err == nil || !strings.Contains(err.Error(), "client certificate") {
		t.Errorf("anvil node list without a client certificate: %v", err)
	}
}

func TestClientCANeedsTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "clients")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = secureListener(ln, Security{TLSClientCAFile: ca.File}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--tls-client-ca-file needs TLS") {
		t.Errorf("client CA without TLS: %v", err)
	}
}
