// Command anvil is Anvil's one binary: `anvil serve` runs the Ironic-compatible
// API, a conductor and the network boot endpoint; `anvil agent` runs on a
// machine being provisioned; `anvil demo` and `anvil bmc-emulator` emulate a
// fleet; `anvil ramdisk build` makes the deploy ramdisk; `anvil boot
// dnsmasq-config` prints a dnsmasq configuration; `anvil states` prints the
// provision state machine; `anvil node|port|driver|conductor|fleet ...` are
// the operator CLI. Each subcommand turns its flags into the config of the
// package that does the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/config"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/isoimage"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

// printError writes a command's error, its secrets masked: an error may
// quote the --database URL or a BMC address with their passwords.
func printError(w io.Writer, err error) {
	fmt.Fprintln(w, "anvil:", secret.String(err.Error()))
}

// secondInterrupt returns a channel closed on the second SIGINT or SIGTERM
// (the first one, caught by main's context, starts the graceful shutdown),
// and the function that stops listening.
func secondInterrupt() (<-chan struct{}, func()) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	hurry, done := make(chan struct{}), make(chan struct{})
	go func() {
		for seen := 0; ; {
			select {
			case <-sig:
				if seen++; seen == 2 {
					close(hurry)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return hurry, func() { signal.Stop(sig); close(done) }
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
	root.AddCommand(newServe(stdout, stderr), newStates(stdout), newAudit(stdout))
	root.AddCommand(newAgent(stdout, stderr), newRamdisk(stdout, stderr), newBootCommand(stdout))
	root.AddCommand(operatorCommands(stdout, stderr)...)
	root.AddCommand(hardwareCommands(stdout, stderr)...)
	return root
}

func newServe(stdout, stderr io.Writer) *cobra.Command {
	host, _ := os.Hostname()
	cfg := server.Config{}
	var logLevel, configFile string
	var gcPercent int
	var pprofListen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API and a conductor (SQLite by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				fh, err := os.Open(configFile)
				if err != nil {
					return err
				}
				err = config.Apply(cmd.Flags(), fh, configFile)
				fh.Close()
				if err != nil {
					return err
				}
			}
			if pprofListen != "" {
				if err := startPprof(pprofListen, stderr); err != nil {
					return err
				}
			}
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(gcPercent)
			}
			lvl, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			cfg.Log = newLogger(stderr, lvl)
			cfg.Ready = func(addr string) {
				fmt.Fprintf(stdout, "anvil: listening on %s://%s (database %s, conductor %s)\n", scheme(&cfg), addr, secret.DSN(cfg.Database), cfg.HostID)
			}
			hurry, stopHurry := secondInterrupt()
			defer stopHurry()
			cfg.Hurry = hurry
			if err := server.Serve(cmd.Context(), cfg); err != nil {
				// The error may quote --database, or pieces of its password
				// where the driver misread an unescaped one.
				return errors.New(secret.WithoutDSN(err.Error(), cfg.Database))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:6385", "address to serve the API on")
	f.StringVar(&cfg.Database, "database", "./anvil.db", "SQLite file path, or a postgres:// URL")
	f.StringVar(&cfg.HostID, "host-id", host, "this conductor's name; one live process per name and database")
	f.StringVar(&cfg.AdvertiseURL, "advertise-url", "", "URL other anvil processes reach this listener at (an API process relays consoles to it); default: the --listen address")
	f.StringVar(&cfg.Role, "role", server.RoleAll, "all (API and conductor), conductor (no API) or api (verbs handed to the owning conductor); other than all needs PostgreSQL")
	f.StringVar(&configFile, "config", "", "settings file (flat TOML or YAML: flag-name = value); flags win")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.IntVar(&gcPercent, "gc-percent", 50, "Go GC target (GOGC); lower trades CPU for memory")
	f.StringVar(&pprofListen, "pprof-listen", "", "serve Go's /debug/pprof profiles on this address (e.g. 127.0.0.1:6060); off by default")
	addConductorFlags(f, &cfg)
	addInterfaceFlags(f, &cfg.Interfaces)
	addBootFlags(f, &cfg)
	addSecurityFlags(f, &cfg)
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

// addConductorFlags adds the conductor's settings, named after Ironic's
// options with dashes; durations take seconds (as Ironic) or a Go duration.
func addConductorFlags(f *pflag.FlagSet, cfg *server.Config) {
	c := &cfg.Conductor
	c.AutomatedClean, c.ForcePowerStateDuringSync = true, true
	c.LockRetries, c.LockRetryInterval = 3, time.Second
	secs := func(d *time.Duration, name string, def time.Duration, usage string) {
		*d = def
		f.Var(config.Seconds{D: d}, name, usage)
	}
	f.IntVar(&c.Workers, "workers", 100, "conductor worker pool size (Ironic's workers_pool_size)")
	secs(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long running work may finish on SIGTERM")
	f.IntVar(&c.LockRetries, "lock-retries", 3, "extra attempts to take a node lock held by another operation")
	secs(&c.LockRetryInterval, "lock-retry-interval", time.Second, "wait between node lock attempts")
	f.BoolVar(&c.AutomatedClean, "automated-clean", true, "clean nodes on provide and undeploy")
	secs(&c.DeployCallbackTimeout, "deploy-callback-timeout", 30*time.Minute, "fail a deploy waiting for its agent longer than this (0: never)")
	secs(&c.CleanCallbackTimeout, "clean-callback-timeout", 30*time.Minute, "fail a clean waiting for its agent longer than this (0: never)")
	secs(&c.InspectWaitTimeout, "inspect-wait-timeout", 30*time.Minute, "fail an inspection waiting longer than this (0: never)")
	secs(&c.RescueCallbackTimeout, "rescue-callback-timeout", 30*time.Minute, "fail a rescue waiting for its agent longer than this (0: never)")
	secs(&c.ServiceCallbackTimeout, "service-callback-timeout", 30*time.Minute, "fail a service waiting for its agent longer than this (0: never)")
	secs(&c.CheckProvisionStateInterval, "check-provision-state-interval", time.Minute, "how often wait-state timeouts are checked")
	secs(&c.SyncPowerStateInterval, "sync-power-state-interval", time.Minute, "how often power states are read from the hardware")
	f.BoolVar(&c.ForcePowerStateDuringSync, "force-power-state-during-sync", true, "put hardware back to the recorded power state (false: record the hardware's)")
	f.IntVar(&c.PowerStateSyncMaxRetries, "power-state-sync-max-retries", 3, "failed power reads before a node goes into maintenance")
	f.IntVar(&c.SyncPowerStateWorkers, "sync-power-state-workers", 8, "parallel power reads during sync")
	secs(&c.PowerFailureRecoveryInterval, "power-failure-recovery-interval", 5*time.Minute, "how often a node power sync put into maintenance (fault \"power failure\") is read again")
	secs(&c.ConductorDeadAfter, "heartbeat-timeout", time.Minute, "a conductor silent this long is dead; its locks are broken")
	secs(&c.HeartbeatInterval, "heartbeat-interval", 0, "how often the conductor records that it is alive (0: 10 s, or a third of --heartbeat-timeout if shorter)")
	f.StringVar(&c.Group, "conductor-group", "", "conductor group: this conductor runs periodic work only for nodes of this group")
	f.IntVar(&c.HashPartitions, "hash-partitions", 32, "points per conductor on the hash ring (Ironic: 2^hash_partition_exponent)")
	f.IntVar(&c.MaxConcurrentDeploy, "max-concurrent-deploy", 250, "deploys running at once before new ones get 503")
	f.IntVar(&c.MaxConcurrentClean, "max-concurrent-clean", 50, "cleans running at once before new ones get 503")
	f.IntVar(&c.HistoryLimit, "node-history-max-entries", 300, "history entries kept per node")
}

// addBootFlags adds the network boot settings, named after Ironic's
// options ([deploy]http_url, http_root, [DEFAULT]public_endpoint,
// [pxe]kernel_append_params, [conductor]file_url_allowed_paths).
func addBootFlags(f *pflag.FlagSet, cfg *server.Config) {
	n := &cfg.Network
	f.StringVar(&n.HTTPURL, "http-url", "", "network boot endpoint as machines reach it, served on the API listener under its path (e.g. http://10.0.2.100:6385/boot); off when empty")
	f.StringVar(&n.Root, "http-root", "./anvil-boot", "directory for network boot files and the image cache")
	f.StringVar(&n.PublicEndpoint, "public-endpoint", "", "API URL agents are given on their kernel command line (ipa-api-url), e.g. http://10.0.2.100:6385")
	f.StringSliceVar(&n.FileAllowedPaths, "file-url-allowed-paths", nil, "directories local (file:// or path) deploy kernels and ramdisks may come from, symbolic links and .. resolved (default: the images directory of --http-root); never list a directory holding the database or other secrets: the boot endpoint serves these files unauthenticated")
	f.StringVar(&n.DHCPProxy, "dhcp-proxy", "", "run the built-in proxyDHCP server on this UDP address (e.g. 0.0.0.0:67): PXE clients of known MACs get iPXE, never an address; off when empty")
	f.StringVar(&n.DHCP6Proxy, "dhcp6-proxy", "", "run the built-in DHCPv6 answer for UEFI HTTP boot on this UDP address (e.g. [::]:547): HTTPClient firmware of http/http-ipxe nodes gets the boot file URL (option 59), never an address; off when empty")
	f.StringVar(&n.ServerIP, "boot-server-ip", "", "this host's IPv4 address on the boot network, for PXE firmware's TFTP (default: the host of --http-url)")
	f.StringVar(&n.TFTPListen, "tftp-listen", "", "run the built-in TFTP server of the iPXE binaries on this UDP address (e.g. 0.0.0.0:69); off when empty")
	f.StringVar(&n.TFTPDir, "tftp-dir", "/usr/lib/ipxe", "directory of the iPXE binaries the TFTP server serves, and the boot endpoint serves to UEFI HTTP boot (Debian's ipxe package)")
	f.StringVar(&n.EFIBinary, "uefi-ipxe-bootfile-name", "ipxe.efi", "the iPXE binary UEFI firmware is handed by --dhcp-proxy/--dhcp6-proxy (TFTP for PXE, HTTP for http-ipxe): ipxe.efi (its own NIC drivers) or snponly.efi (the firmware's; Ironic's default)")
	f.StringVar(&cfg.DeployLogsPath, "deploy-logs-local-path", "", "directory the agent's logs are saved to when an agent command fails (Ironic's [agent]deploy_logs_local_path; empty: not collected)")
	f.StringVar(&cfg.OCIVerifyCA, "oci-verify-ca", "", "TLS verification of the registries of oci:// images (Ironic's [oci]verify_ca): true (default, the system's roots), false, or a CA bundle file")
	f.BoolVar(&cfg.OCIAllowHTTP, "oci-permit-fallback-to-http", false, "reach a registry of oci:// images over plain HTTP when it does not answer HTTPS (Ironic's [oci]permit_fallback_to_http_transport)")
	f.BoolVar(&cfg.AllowMD5, "allow-md5-checksum", false, "accept md5 image checksums (Ironic's [agent]allow_md5_checksum): in the direct deploy and the boot service's image cache; refused by default")
	f.StringVar(&cfg.DeployLogsCollect, "deploy-logs-collect", "on_failure", "when the agent's logs are saved to --deploy-logs-local-path: on_failure, always (also after a successful deploy) or never (Ironic's [agent]deploy_logs_collect)")
	f.StringVar(&cfg.KernelParams, "kernel-append-params", "", "kernel parameters added to network and virtual media booted ramdisks (nodes' kernel_append_params override)")
	d := isoimage.DefaultLoaders()
	f.StringVar(&n.ISOLoaders.ISOLinux, "iso-isolinux", d.ISOLinux, "isolinux.bin for BIOS boot of virtual media ISOs (Debian package isolinux)")
	f.StringVar(&n.ISOLoaders.LDLinux, "iso-ldlinux", d.LDLinux, "ldlinux.c32 for BIOS boot of virtual media ISOs (Debian package syslinux-common)")
	f.StringVar(&n.ISOLoaders.EFI, "iso-efi-loader", d.EFI, "EFI loader of virtual media ISOs, GRUB for CD boot reading /boot/grub/grub.cfg (Debian package grub-efi-amd64-bin)")
}
