package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/config"
	"github.com/anvil-metal/anvil/internal/server"
)

// addSecurityFlags adds what guards the API listener: timeouts, the
// connection cap, authentication, the Host allow-list and TLS.
func addSecurityFlags(f *pflag.FlagSet, cfg *server.Config) {
	l := &cfg.Limits
	secs := func(d *time.Duration, name string, def time.Duration, usage string) {
		*d = def
		f.Var(config.Seconds{D: d}, name, usage)
	}
	secs(&l.ReadHeaderTimeout, "api-read-header-timeout", server.DefaultReadHeaderTimeout, "a client must send its request headers within this")
	secs(&l.ReadTimeout, "api-read-timeout", server.DefaultReadTimeout, "a client must send its whole request (body included) within this")
	secs(&l.WriteTimeout, "api-write-timeout", server.DefaultWriteTimeout, "an answer must be written within this (event streams and boot files: per write)")
	secs(&l.IdleTimeout, "api-idle-timeout", server.DefaultIdleTimeout, "keep-alive connections idle this long are closed")
	f.IntVar(&l.MaxConnections, "api-max-connections", server.DefaultMaxConnections, "open API connections at most; at the cap stalled or idle ones are closed for new clients, else new clients wait")
	f.IntVar(&l.MaxConnectionsPerAddress, "api-max-connections-per-address", server.DefaultMaxConnectionsPerAddress, "open API connections of one client address at most; more are answered 429")
	secs(&l.BodyGrace, "api-body-grace", server.DefaultBodyGrace, "a request body may take this long before --api-min-body-rate applies")
	f.IntVar(&l.MaxStreamsPerClient, "api-max-streams-per-client", api.DefaultMaxStreamsPerClient, "open event streams of one user (under noauth, one client address) at most; more are answered 429")
	f.IntVar(&l.MaxStreams, "api-max-streams", 0, "open event streams of the server at most (0: a quarter of --api-max-connections); more are answered 503")
	f.Int64Var(&l.MinBodyRate, "api-min-body-rate", server.DefaultMinBodyRate, "after --api-body-grace a request body must arrive at this many bytes a second, or it is answered 408 and its connection closed")
	s := &cfg.Security
	f.StringVar(&s.Auth.Strategy, "auth-strategy", auth.NoAuth, "noauth, http_basic (Ironic's auth_strategy) or jwt (OpenID Connect bearer tokens); the root, /v1 and the agent's endpoints stay public")
	f.StringVar(&s.Auth.JWT.Issuer, "jwt-issuer", "", "jwt: the OpenID Connect issuer URL (Keycloak realm, Dex, ...)")
	f.StringVar(&s.Auth.JWT.Audience, "jwt-audience", "", "jwt: the client ID tokens must be issued for (empty: not checked)")
	f.StringVar(&s.Auth.JWT.RolesClaim, "jwt-roles-claim", "roles", "jwt: claim (dotted path) listing the roles admin, member, reader; Keycloak: realm_access.roles")
	f.StringVar(&s.Auth.JWT.ProjectClaim, "jwt-project-claim", "project_id", "jwt: claim naming a token's project: such a token sees and acts only on nodes its project owns or leases")
	f.StringVar(&s.Auth.UserFile, "http-basic-auth-user-file", "/etc/anvil/htpasswd", "Apache htpasswd file of bcrypt entries for http_basic (htpasswd -B)")
	f.BoolVar(&s.AllowInsecureNoAuth, "allow-insecure-noauth", false, "let noauth serve beyond loopback (refused otherwise: anyone reaching the port could wipe disks)")
	f.StringSliceVar(&s.AllowedHosts, "allowed-hosts", nil, "host names requests may carry in Host besides IP addresses, localhost and the --http-url/--public-endpoint hosts (against DNS rebinding); * allows any")
	f.StringVar(&s.AuditLog, "audit-log", "", "append an audit record of every write (user, remote, method, path, node, status, request id) to this JSON-lines file (0600); read it with `anvil audit`; default: the log")
	f.StringVar(&s.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this PEM certificate (chain); needs --tls-key-file; both are re-read on SIGHUP")
	f.StringVar(&s.TLSKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	f.StringVar(&s.TLSClientCAFile, "tls-client-ca-file", "", "with TLS, API requests must also present a client certificate signed by a CA of this PEM file (the public routes, the agent's lookup and heartbeat and boot files need none)")
}

// scheme is the URL scheme the API is served on.
func scheme(cfg *server.Config) string {
	if cfg.Security.TLSCertFile != "" {
		return "https"
	}
	return "http"
}
