package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/dashboard"
	"github.com/anvil-metal/anvil/internal/policy"
	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// Security is how `anvil serve` guards its listener.
type Security struct {
	// Auth is the authentication strategy (noauth or http_basic).
	Auth auth.Config
	// AllowedHosts are the names (besides IP literals and localhost) a
	// request's Host may carry; "*" allows any.
	AllowedHosts []string
	// TLSCertFile and TLSKeyFile, both set, serve HTTPS.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile, with TLS, makes the API require a client
	// certificate signed by one of its PEM CAs, besides the
	// authentication strategy; the public routes (root, /v1, the agent's
	// lookup and heartbeat, boot files, the dashboard's page) need none,
	// as ramdisks and firmware present none.
	TLSClientCAFile string
	// AllowInsecureNoAuth lets noauth listen beyond loopback (with a
	// warning); without it, Serve refuses.
	AllowInsecureNoAuth bool
	// AuditLog, when set, is the JSON-lines file audit records are
	// appended to (created 0600); empty sends them to the log.
	AuditLog string
}

// guardStore is what guard reads: sessions for the dashboard's logins.
type guardStore interface {
	auth.SessionStore
}

// policyGuard lets a request reach next when its principal may act under
// rule (with no target): a route outside the API's table, such as
// /metrics. The API's routes carry their own rules (internal/api).
func policyGuard(next http.Handler, pol *policy.Enforcer, rule string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who, ok := auth.PrincipalOf(r.Context()); ok && !pol.Allowed(policy.CredsOf(who), rule, nil) {
			api.WriteError(w, http.StatusForbidden, rule+" is disallowed by policy")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard puts the Host check, authentication and the audit record in front
// of h, auditing to auditLog (authorization is the API's, on its routes). Boot files are public: machines fetch them
// before they hold any credential; so are the dashboard's assets, whose
// page logs in at dashboard.SessionPath (auth's sessions).
func guard(ctx context.Context, h http.Handler, cfg Config, bootPrefix string, auditLog *slog.Logger, st guardStore) (http.Handler, error) {
	ac := cfg.Security.Auth
	ac.Log = cfg.Log
	// Dashboard sessions live in the database: every API process of it
	// knows them, and they outlive a restart.
	ac.Sessions = st
	// The dashboard's page and assets hold no data (the page reads
	// everything through the API with its session), so a browser without a
	// session gets the page, which asks it to log in at SessionPath.
	if cfg.Role != RoleConductor { // a conductor-only listener serves no dashboard
		ac.SessionPath = dashboard.SessionPath
	}
	ac.Public = func(p string) bool {
		return auth.PublicPath(p) || bootPrefix != "" && strings.HasPrefix(p, bootPrefix+"/") ||
			p == dashboard.Path || strings.HasPrefix(p, dashboard.Path+"/") ||
			// a conductor's console relay: its one-time ticket is its credential
			strings.HasPrefix(p, api.ConsoleRelayPrefix)
	}
	h = audit(h, auditLog)
	h, err := auth.Middleware(ctx, h, ac)
	if err != nil {
		return nil, err
	}
	if cfg.Security.TLSClientCAFile != "" {
		h = requireClientCert(h, ac.Public)
	}
	allowed := append([]string{}, cfg.Security.AllowedHosts...)
	for _, u := range []string{cfg.Network.HTTPURL, cfg.Network.PublicEndpoint, cfg.AdvertiseURL} {
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			allowed = append(allowed, pu.Host)
		}
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && host != "" {
		allowed = append(allowed, host)
	}
	// Bound to every address, the listener is reached by the machine's
	// name (what it advertises to other processes: advertised).
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil {
		if name, ok := machineName(host); ok {
			allowed = append(allowed, name)
		}
	}
	return hostGuard(h, allowed), nil
}

// secureListener wraps ln in TLS when a certificate is configured. Beyond
// loopback, it refuses noauth unless AllowInsecureNoAuth, and warns about
// noauth (so allowed) and about plain HTTP. With TLS, reload re-reads the certificate and key (on
// SIGHUP); it is nil without.
func secureListener(ln net.Listener, sec Security, log *slog.Logger) (_ net.Listener, reload func() error, _ error) {
	if (sec.TLSCertFile == "") != (sec.TLSKeyFile == "") {
		return nil, nil, fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	tlsOn := sec.TLSCertFile != ""
	if tlsOn {
		kp := &keyPair{certFile: sec.TLSCertFile, keyFile: sec.TLSKeyFile}
		if err := kp.load(); err != nil {
			return nil, nil, err
		}
		tc := &tls.Config{GetCertificate: kp.get, MinVersion: tls.VersionTLS12}
		if sec.TLSClientCAFile != "" {
			pool, err := tlsconf.LoadCAs(sec.TLSClientCAFile)
			if err != nil {
				return nil, nil, fmt.Errorf("--tls-client-ca-file: %w", err)
			}
			// Verified when given; required per route by requireClientCert.
			tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
		}
		ln = tls.NewListener(ln, tc)
		reload = kp.load
	} else if sec.TLSClientCAFile != "" {
		return nil, nil, fmt.Errorf("--tls-client-ca-file needs TLS: --tls-cert-file and --tls-key-file")
	}
	if !isLoopback(ln.Addr()) {
		if sec.Auth.Strategy == "" || sec.Auth.Strategy == auth.NoAuth {
			if !sec.AllowInsecureNoAuth {
				return nil, nil, fmt.Errorf("refusing to serve on %s without authentication: anyone who reaches it could power off machines and wipe disks; use --auth-strategy http_basic, listen on 127.0.0.1, or accept the risk with --allow-insecure-noauth", ln.Addr())
			}
			log.Warn("INSECURE: the API listens beyond loopback without authentication: anyone who reaches it can power off machines and wipe disks; use --auth-strategy http_basic", "listen", ln.Addr().String())
		}
		if !tlsOn {
			log.Warn("INSECURE: the API listens beyond loopback without TLS: passwords and tokens cross the network in clear; use --tls-cert-file and --tls-key-file", "listen", ln.Addr().String())
		}
	}
	return ln, reload, nil
}

// requireClientCert answers 401 to a request for a non-public path that
// came without a client certificate the listener verified.
func requireClientCert(next http.Handler, public func(string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !public(r.URL.Path) && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			api.WriteError(w, http.StatusUnauthorized, "A client certificate signed by the API's client CA is required.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// keyPair is the served certificate, replaced by load.
type keyPair struct {
	certFile, keyFile string
	mu                sync.RWMutex
	cert              *tls.Certificate
}

// load reads the files; on error the certificate in use stays.
func (k *keyPair) load() error {
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	k.mu.Lock()
	k.cert = &cert
	k.mu.Unlock()
	return nil
}

func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.cert, nil
}

// reloadOnHUP calls reload on every SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, reload func() error, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := reload(); err != nil {
					log.Error("TLS certificate reload failed; the previous one stays", "err", err)
					continue
				}
				log.Info("TLS certificate reloaded")
			}
		}
	}()
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
