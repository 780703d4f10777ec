package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
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
}

// guard puts the Host check and authentication in front of h. Boot files
// are public: machines fetch them before they hold any credential.
func guard(h http.Handler, cfg Config, bootPrefix string) (http.Handler, error) {
	ac := cfg.Security.Auth
	ac.Log = cfg.Log
	ac.Public = func(p string) bool {
		return auth.PublicPath(p) || bootPrefix != "" && strings.HasPrefix(p, bootPrefix+"/")
	}
	h = audit(h, cfg.Log)
	h, err := auth.Middleware(h, ac)
	if err != nil {
		return nil, err
	}
	allowed := append([]string{}, cfg.Security.AllowedHosts...)
	for _, u := range []string{cfg.Network.HTTPURL, cfg.Network.PublicEndpoint} {
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			allowed = append(allowed, pu.Host)
		}
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && host != "" {
		allowed = append(allowed, host)
	}
	return hostGuard(h, allowed), nil
}

// secureListener wraps ln in TLS when a certificate is configured, and
// warns when the API is reachable beyond loopback without authentication
// or without TLS.
func secureListener(ln net.Listener, sec Security, log *slog.Logger) (net.Listener, error) {
	if (sec.TLSCertFile == "") != (sec.TLSKeyFile == "") {
		return nil, fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	tlsOn := sec.TLSCertFile != ""
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(sec.TLSCertFile, sec.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	if !isLoopback(ln.Addr()) {
		if sec.Auth.Strategy == "" || sec.Auth.Strategy == auth.NoAuth {
			log.Warn("INSECURE: the API listens beyond loopback without authentication: anyone who reaches it can power off machines and wipe disks; use --auth-strategy http_basic", "listen", ln.Addr().String())
		}
		if !tlsOn {
			log.Warn("INSECURE: the API listens beyond loopback without TLS: passwords and tokens cross the network in clear; use --tls-cert-file and --tls-key-file", "listen", ln.Addr().String())
		}
	}
	return ln, nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
