package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/config"
	"github.com/anvil-metal/anvil/internal/server"
)

// addSecurityFlags adds what guards the API listener: timeouts and the
// connection cap.
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
	f.IntVar(&l.MaxConnections, "api-max-connections", server.DefaultMaxConnections, "open API connections at most; more wait in the listen backlog")
}
