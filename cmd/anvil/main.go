// Command anvil is Anvil's one binary: `anvil serve` runs the Ironic-compatible
// API and a conductor; `anvil states` prints the provision state machine.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "anvil:", err)
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "anvil",
		Short:         "Bare-metal provisioning with Ironic's API, in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServe(stdout, stderr), newStates(stdout))
	return root
}

func newServe(stdout, stderr io.Writer) *cobra.Command {
	host, _ := os.Hostname()
	cfg := server.Config{}
	var logLevel string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API and a conductor (SQLite by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
			cfg.Ready = func(addr string) {
				fmt.Fprintf(stdout, "anvil: listening on http://%s (database %s, conductor %s)\n", addr, cfg.Database, cfg.HostID)
			}
			return server.Serve(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:6385", "address to serve the API on")
	f.StringVar(&cfg.Database, "database", "./anvil.db", "SQLite file path, or a postgres:// URL")
	f.StringVar(&cfg.HostID, "host-id", host, "this conductor's name")
	f.IntVar(&cfg.Workers, "workers", 100, "conductor worker pool size")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long running work may finish on SIGTERM")
	f.IntVar(&cfg.LockRetries, "lock-retries", 3, "extra attempts to take a node lock held by another operation")
	f.DurationVar(&cfg.LockRetryInterval, "lock-retry-interval", time.Second, "wait between node lock attempts")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func newStates(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "states",
		Short: "Print the provision state machine (json, dot or mermaid)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch format {
			case "json":
				return fsm.WriteJSON(stdout)
			case "dot":
				return fsm.WriteDOT(stdout)
			case "mermaid":
				return fsm.WriteMermaid(stdout)
			}
			return fmt.Errorf("--format must be json, dot or mermaid, not %q", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json, dot or mermaid")
	return cmd
}
