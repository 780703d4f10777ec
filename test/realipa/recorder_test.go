package realipa_test

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
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// exchange is one HTTP request and its answer, as it crossed a recorder.
type exchange struct {
	Seq           int               `json:"seq"`
	Dir           string            `json:"dir"` // "ipa->anvil" or "anvil->ipa"
	Phase         string            `json:"phase"`
	Method        string            `json:"method"`
	Path          string            `json:"path"`
	Query         string            `json:"query,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Body          json.RawMessage   `json:"body,omitempty"`
	Status        int               `json:"status"`
	Answer        json.RawMessage   `json:"answer,omitempty"`
	AnswerHeaders map[string]string `json:"answer_headers,omitempty"`
}

// recorder logs every exchange of the two proxies: IPA → anvil serve (the
// guest's guestfwd lands on it) and anvil → IPA's command API (IPA
// advertises the recorder's address as its callback_url).
//
// IPA serves its command API over TLS with a certificate it generates at
// boot and sends in the heartbeat's agent_verify_ca, so the second
// recorder terminates TLS with its own certificate (tlsCert, for
// 127.0.0.1): the first recorder passes each heartbeat on with
// agent_verify_ca replaced by the recorder's certificate (the recording
// keeps IPA's), and the second reaches IPA verifying that its certificate
// is the one IPA sent.
type recorder struct {
	mu    sync.Mutex
	phase string
	log   []exchange
	token string // the agent token, once seen: redacted from the record
	ipaCA []byte // DER of the certificate IPA sent in its last heartbeat

	tlsCert tls.Certificate
	certPEM string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{tlsCert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// heartbeatCA notes the certificate of a heartbeat body and returns the
// body to pass on, with the recorder's certificate instead.
func (r *recorder) heartbeatCA(body []byte) []byte {
	var hb map[string]any
	if json.Unmarshal(body, &hb) != nil {
		return body
	}
	ca, _ := hb["agent_verify_ca"].(string)
	if ca == "" {
		return body
	}
	if b, _ := pem.Decode([]byte(ca)); b != nil {
		r.mu.Lock()
		r.ipaCA = b.Bytes
		r.mu.Unlock()
	}
	hb["agent_verify_ca"] = r.certPEM
	out, _ := json.Marshal(hb)
	return out
}

// verifyIPA accepts IPA's certificate only if it is the one its heartbeat sent.
func (r *recorder) verifyIPA(raw [][]byte, _ [][]*x509.Certificate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(raw) == 0 || !bytes.Equal(raw[0], r.ipaCA) {
		return errors.New("IPA's TLS certificate is not the one its heartbeat sent")
	}
	return nil
}

// headers worth recording (the rest are Go's or urllib3's plumbing).
var recorded = []string{"X-Openstack-Ironic-Api-Version", "Content-Type", "Accept", "User-Agent", "Openstack-Api-Version"}

func pick(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range recorded {
		if v := h.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

func rawJSON(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// proxy starts a recording reverse proxy on a free loopback port to
// target and returns its port.
func (r *recorder) proxy(t *testing.T, dir, target string) int {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	if u.Scheme == "https" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Verified by verifyIPA, against the certificate IPA sent.
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: r.verifyIPA} //nolint:gosec
		rp.Transport = tr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme == "https" {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{r.tlsCert}, MinVersion: tls.VersionTLS12})
	}
	srv := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		pass := body
		if strings.HasPrefix(req.URL.Path, "/v1/heartbeat/") {
			pass = r.heartbeatCA(body)
			req.ContentLength = int64(len(pass))
		}
		req.Body = io.NopCloser(bytes.NewReader(pass))
		rec := &capture{ResponseWriter: w, status: 200}
		rp.ServeHTTP(rec, req)
		r.add(exchange{Dir: dir, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery,
			Headers: pick(req.Header), Body: rawJSON(body), Status: rec.status, Answer: rawJSON(rec.buf.Bytes()),
			AnswerHeaders: pick(rec.Header())})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func (r *recorder) add(e exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq, e.Phase = len(r.log)+1, r.phase
	if r.token == "" && e.Path == "/v1/lookup" && e.Status == 200 {
		var lr struct {
			Config struct {
				Token string `json:"agent_token"`
			} `json:"config"`
		}
		if json.Unmarshal(e.Answer, &lr) == nil && lr.Config.Token != "******" {
			r.token = lr.Config.Token
		}
	}
	r.log = append(r.log, e)
}

func (r *recorder) setPhase(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
}

// newToken forgets the token (a fresh IPA looks up for a new one); the
// previous one is redacted from what was logged so far first.
func (r *recorder) newToken() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redact()
	r.token = ""
}

// redact replaces the agent token by "{{token}}" (must hold r.mu).
func (r *recorder) redact() {
	if r.token == "" {
		return
	}
	for i := range r.log {
		e := &r.log[i]
		e.Query = strings.ReplaceAll(e.Query, r.token, "{{token}}")
		e.Body = json.RawMessage(strings.ReplaceAll(string(e.Body), r.token, "{{token}}"))
		e.Answer = json.RawMessage(strings.ReplaceAll(string(e.Answer), r.token, "{{token}}"))
	}
}

// exchanges returns a copy of the log, the current token redacted.
func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redact()
	return append([]exchange(nil), r.log...)
}

// save writes the log (one JSON document) to path.
func (r *recorder) save(path string) error {
	b, err := json.MarshalIndent(r.exchanges(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// capture is a ResponseWriter keeping a copy of the answer.
type capture struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (c *capture) WriteHeader(s int) { c.status = s; c.ResponseWriter.WriteHeader(s) }
func (c *capture) Write(b []byte) (int, error) {
	c.buf.Write(b)
	return c.ResponseWriter.Write(b)
}
