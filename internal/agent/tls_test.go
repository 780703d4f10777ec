package agent

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/tlsconf"
	"github.com/anvil-metal/anvil/internal/tlsconf/tlstest"
)

// lockedBuffer is a log sink the agent writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAgentVerifiesTheAPI: the agent looks its node up only on an API
// whose certificate it can verify (the system's CAs, or --ca-file), and
// presents its client certificate (--cert-file, --key-file) to an API that
// asks for one; ipa-insecure skips the check.
func TestAgentVerifiesTheAPI(t *testing.T) {
	serverCA, clientCA := tlstest.NewCA(t, "api"), tlstest.NewCA(t, "agents")
	certFile, keyFile := serverCA.Server(t)
	agentCert, agentKey := clientCA.Client(t, "agent")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := tlsconf.LoadCAs(clientCA.File)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lookups := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/lookup") {
			mu.Lock()
			lookups++
			mu.Unlock()
		}
		http.NotFound(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	reached := func() int { mu.Lock(); defer mu.Unlock(); return lookups }

	run := func(name string, cfg tlsconf.Client, wantReach bool, wantLog string) {
		t.Helper()
		mu.Lock()
		lookups = 0
		mu.Unlock()
		var logs lockedBuffer
		a, err := New(Config{APIURL: srv.URL, Listen: "127.0.0.1:0", MACs: []string{"52:54:00:aa:bb:01"},
			Disk: t.TempDir() + "/disk", TLS: cfg, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		deadline := time.Now().Add(testbin.ReadyTimeout)
		for (wantReach && reached() == 0 || !wantReach && !strings.Contains(logs.String(), wantLog)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling with a deadline
		}
		cancel()
		<-done
		if got := reached(); (got > 0) != wantReach {
			t.Errorf("%s: %d lookups reached the API, want reached=%v\n%s", name, got, wantReach, logs.String())
		}
		if wantLog != "" && !strings.Contains(logs.String(), wantLog) {
			t.Errorf("%s: the log does not say %q:\n%s", name, wantLog, logs.String())
		}
	}
	run("system CAs only", tlsconf.Client{}, false, "certificate")
	run("--ca-file", tlsconf.Client{CAFile: serverCA.File}, true, "")
	run("ipa-insecure", tlsconf.Client{InsecureSkipVerify: true}, true, "")

	// The API asks for a client certificate of the agents' CA.
	srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, clients
	run("no client certificate", tlsconf.Client{CAFile: serverCA.File}, false, "certificate")
	run("--cert-file/--key-file", tlsconf.Client{CAFile: serverCA.File, CertFile: agentCert, KeyFile: agentKey}, true, "")
}
