package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/httpbasic"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"golang.org/x/crypto/bcrypt"

	"github.com/anvil-metal/anvil/internal/auth"
)

// htpasswd writes a user file with one bcrypt entry.
func htpasswd(t *testing.T, user, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(p, []byte(user+":"+string(h)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// request sends method path with a Host header and basic credentials
// (user "" sends none) and returns the status and body.
func request(t *testing.T, c *http.Client, base, method, path, host, user, pass, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if host != "" {
		req.Host = host
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestHostGuard(t *testing.T) {
	s := serveWith(t, func(c *Config) { c.Security.AllowedHosts = []string{"anvil.example"} })
	port := s.base[strings.LastIndex(s.base, ":"):]
	for host, want := range map[string]int{
		"127.0.0.1" + port:        200,
		"localhost" + port:        200,
		"LOCALHOST.":              200,
		"[::1]" + port:            200,
		"10.0.2.2" + port:         200, // an IP literal is never a rebinding
		"anvil.example" + port:    200,
		"Anvil.Example":           200,
		"evil.example" + port:     400,
		"127.0.0.1.nip.io" + port: 400,
		"localhost.evil.example":  400,
	} {
		if got, body := request(t, http.DefaultClient, s.base, "GET", "/v1/nodes", host, "", "", ""); got != want {
			t.Errorf("Host %s: %d %s, want %d", host, got, body, want)
		}
	}
	_, body := request(t, http.DefaultClient, s.base, "GET", "/v1/nodes", "evil.example", "", "", "")
	if !strings.Contains(body, "error_message") || !strings.Contains(body, "--allowed-hosts") {
		t.Errorf("refusal body %s: want Ironic's error body naming --allowed-hosts", body)
	}
}

// TestHTTPBasic: without credentials or with a wrong password nothing is
// written; the root and /v1 stay public; writes are audited with the user.
func TestHTTPBasic(t *testing.T) {
	var logBuf syncBuffer
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "admin", "Sw0rdfish!")}
		c.Log = slog.New(slog.NewJSONHandler(&logBuf, nil))
	})
	c := http.DefaultClient
	for _, p := range []string{"/", "/v1"} {
		if st, body := request(t, c, s.base, "GET", p, "", "", "", ""); st != 200 {
			t.Errorf("GET %s without credentials: %d %s", p, st, body)
		}
	}
	for _, user := range []struct{ u, p string }{{"", ""}, {"admin", "wrong"}} {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "intruder"}`},
			{"GET", "/v1/nodes", ""},
			{"GET", "/metrics", ""},
			{"GET", "/v1/events/stream", ""},
		} {
			if st, body := request(t, c, s.base, r.method, r.path, "", user.u, user.p, r.body); st != 401 {
				t.Errorf("%s %s as %q/%q: %d %s, want 401", r.method, r.path, user.u, user.p, st, body)
			}
		}
	}
	if st, body := request(t, c, s.base, "POST", "/v1/nodes", "", "admin", "Sw0rdfish!", `{"driver": "fake-hardware", "name": "n1"}`); st != 201 {
		t.Fatalf("create as admin: %d %s", st, body)
	}
	st, body := request(t, c, s.base, "GET", "/v1/nodes", "", "admin", "Sw0rdfish!", "")
	if st != 200 || strings.Count(body, `"name"`) != 1 || strings.Contains(body, "intruder") {
		t.Fatalf("node list as admin: %d %s (want only n1)", st, body)
	}
	// The agent's endpoints are public (token-guarded): a lookup without
	// credentials is answered by the API (404: no such node), not 401.
	if st, body := request(t, c, s.base, "GET", "/v1/lookup?addresses=52:54:00:00:00:01", "", "", "", ""); st == 401 {
		t.Fatalf("lookup without credentials: %d %s", st, body)
	}
	logs := logBuf.String()
	if !strings.Contains(logs, `"msg":"audit","user":"admin"`) || !strings.Contains(logs, `"status":201`) {
		t.Errorf("no audit record of admin's create in:\n%s", logs)
	}
	if strings.Contains(logs, "Sw0rdfish") || strings.Contains(logs, "wrong") {
		t.Errorf("a password reached the log:\n%s", logs)
	}
}

// TestGophercloudHTTPBasic: gophercloud's httpbasic client works unchanged.
func TestGophercloudHTTPBasic(t *testing.T) {
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "ops", "gc-pass")}
	})
	sc, err := httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{IronicEndpoint: s.base + "/v1/", IronicUser: "ops", IronicUserPassword: "gc-pass"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Microversion = "1.80"
	n, err := nodes.Create(t.Context(), sc, nodes.CreateOpts{Driver: "fake-hardware", Name: "gc1"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	got, err := nodes.Get(t.Context(), sc, n.UUID).Extract()
	if err != nil || got.Name != "gc1" {
		t.Fatalf("get: %v %v", got, err)
	}
	bad, _ := httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{IronicEndpoint: s.base + "/v1/", IronicUser: "ops", IronicUserPassword: "nope"})
	if _, err := nodes.Get(t.Context(), bad, n.UUID).Extract(); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "anvil test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	s := serveWith(t, func(c *Config) { c.Security.TLSCertFile, c.Security.TLSKeyFile = cert, key })
	base := strings.Replace(s.base, "http://", "https://", 1)
	good := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if st, body := request(t, good, base, "GET", "/v1/nodes", "", "", "", ""); st != 200 {
		t.Fatalf("GET over TLS: %d %s", st, body)
	}
	// Another CA's client refuses the server.
	_, _, other := selfSigned(t)
	bad := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: other}}}
	if _, err := bad.Get(base + "/v1"); err == nil {
		t.Fatal("a client trusting another CA connected")
	}
	// Plain HTTP gets no API answer.
	if resp, err := http.Get(s.base + "/v1"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served on the TLS listener")
		}
	}
}

// TestTLSReloadOnHUP: new certificate files are served after SIGHUP.
func TestTLSReloadOnHUP(t *testing.T) {
	cert, key, pool := selfSigned(t)
	s := serveWith(t, func(c *Config) { c.Security.TLSCertFile, c.Security.TLSKeyFile = cert, key })
	base := strings.Replace(s.base, "http://", "https://", 1)
	trusting := func(p *x509.CertPool) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p}, DisableKeepAlives: true}}
	}
	if st, body := request(t, trusting(pool), base, "GET", "/v1", "", "", "", ""); st != 200 {
		t.Fatalf("before reload: %d %s", st, body)
	}
	cert2, key2, pool2 := selfSigned(t)
	for src, dst := range map[string]string{cert2: cert, key2: key} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testTimeout)
	for {
		resp, err := trusting(pool2).Get(base + "/v1")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate was never served: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// TestInsecureWarnings: beyond loopback, noauth is refused unless allowed,
// and then warned about, as is plain HTTP; on loopback neither.
func TestInsecureWarnings(t *testing.T) {
	for _, c := range []struct {
		addr         string
		allow, fails bool
		warn         bool
	}{{"127.0.0.1:0", false, false, false}, {"0.0.0.0:0", false, true, false}, {"0.0.0.0:0", true, false, true}} {
		var buf syncBuffer
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		sln, _, err := secureListener(ln, Security{AllowInsecureNoAuth: c.allow}, slog.New(slog.NewTextHandler(&buf, nil)))
		ln.Close()
		if c.fails != (err != nil) || c.fails && !strings.Contains(err.Error(), "--allow-insecure-noauth") {
			t.Errorf("%s allow=%v: %v", c.addr, c.allow, err)
			continue
		}
		if err != nil {
			continue
		}
		sln.Close()
		got := buf.String()
		if c.warn != (strings.Contains(got, "without authentication") && strings.Contains(got, "without TLS")) {
			t.Errorf("%s: warnings %q", c.addr, got)
		}
	}
}

// TestBaremetalCLIHTTPBasic drives the real `baremetal` CLI with http_basic
// and over TLS with --os-cacert.
func TestBaremetalCLIHTTPBasic(t *testing.T) {
	bin := testbin.BaremetalCLI(t)
	cert, key, _ := selfSigned(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "cli", "cli-pass")}
		c.Security.TLSCertFile, c.Security.TLSKeyFile = cert, key
	})
	base := strings.Replace(s.base, "http://", "https://", 1)
	run := func(pass, cacert string, args ...string) ([]byte, error) {
		cmd := exec.Command(bin, append([]string{"--os-endpoint", base, "--os-auth-type", "http_basic",
			"--os-username", "cli", "--os-password", pass, "--os-cacert", cacert, "--max-retries", "0"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return append(out, stderr.Bytes()...), err
		}
		return out, nil
	}
	if out, err := run("cli-pass", cert, "node", "create", "--driver", "fake-hardware", "--name", "via-cli", "-f", "json"); err != nil {
		t.Fatalf("node create: %v\n%s", err, out)
	}
	out, err := run("cli-pass", cert, "node", "list", "-f", "json")
	if err != nil {
		t.Fatalf("node list: %v\n%s", err, out)
	}
	var list []map[string]any
	if err := json.Unmarshal(out, &list); err != nil || len(list) != 1 || list[0]["Name"] != "via-cli" {
		t.Fatalf("node list: %s", out)
	}
	if out, err := run("wrong", cert, "node", "list"); err == nil {
		t.Fatalf("a wrong password listed nodes:\n%s", out)
	}
	otherCert, _, _ := selfSigned(t)
	if out, err := run("cli-pass", otherCert, "node", "list"); err == nil {
		t.Fatalf("a wrong CA listed nodes:\n%s", out)
	}
}
