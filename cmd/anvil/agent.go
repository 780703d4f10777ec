package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/agent"
)

func newAgent(stdout, stderr io.Writer) *cobra.Command {
	var cfg agent.Config
	var logLevel, cmdline string
	var once bool
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the deploy agent on a machine being provisioned",
		Long: `Run the deploy agent. Settings not given as flags come from the kernel
command line (--cmdline, /proc/cmdline) under IPA's names: ipa-api-url=,
BOOTIF=, ipa-advertise-host=, ipa-advertise-port=, ipa-listen-host=,
ipa-listen-port=, ipa-insecure, ipa-debug, plus anvil.min-disk-size= and
anvil.heartbeat-interval=. Without --disk the install disk is chosen as IPA
does: the smallest whole non-removable disk of at least 4 GiB. A lookup that
fails is logged with its reason, the MACs and the API URL, and retried with a
jittered back-off (at most 10 s apart); --once looks up once and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			kernel, cmdlineErr := agent.ReadCmdline(cmdline)
			if kernel.Debug && !cmd.Flags().Changed("log-level") {
				lvl = slog.LevelDebug
			}
			cfg.Log = newLogger(stderr, lvl)
			if cmdlineErr != nil {
				cfg.Log.Warn("kernel command line: ignoring malformed settings", "err", cmdlineErr)
			}
			if err := kernel.Apply(cmd.Context(), &cfg, cmd.Flags().Changed); err != nil {
				return err
			}
			cfg.Ready = func(addr string) {
				fmt.Fprintf(stdout, "anvil agent: command API on http://%s\n", addr)
			}
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			if once {
				if err := a.LookupOnce(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "anvil agent: lookup of %s on %s found node %s\n",
					strings.Join(a.MACs(), ","), cfg.APIURL, a.NodeUUID())
				return nil
			}
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.APIURL, "api-url", "http://127.0.0.1:6385", "the Anvil (Ironic) API to look the node up on")
	f.StringArrayVar(&cfg.MACs, "mac", nil, "MAC address to look up by (repeatable; default: the NICs in /sys/class/net)")
	f.StringArrayVar(&cfg.Disks, "disk", nil, "block device or file images are written to, as PATH[,model=M,serial=S,vendor=V,wwn=W,hctl=H,by_path=P,rotational=true]; repeatable: root device hints choose among them, the first is the default (default: chosen as IPA does)")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9999", "address of the command API")
	f.StringVar(&cfg.AdvertiseURL, "advertise-url", "", "callback_url reported in heartbeats (default http://<listen>)")
	f.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 0, "fixed heartbeat interval (default: 0.3-0.6 x the lookup's heartbeat_timeout)")
	f.StringVar(&cfg.RootDir, "root-dir", "", "root directory: proc/ and sys/ are read for the inventory, etc/anvil-rescue-password is written by rescue (default /)")
	f.StringVar(&cfg.EFIVarsDir, "efivars", "", "UEFI variable store (efivarfs) install_bootloader writes boot entries to; set, the agent acts as booted by UEFI (default /sys/firmware/efi/efivars, UEFI when /sys/firmware/efi exists)")
	f.BoolVar(&cfg.BIOS, "bios", false, "the machine boots by BIOS: never read or write UEFI variables, whatever /sys/firmware/efi shows (emulated machines on a UEFI host)")
	f.BoolVar(&cfg.AllowMD5, "allow-md5", false, "accept md5 image checksums")
	f.StringVar(&cfg.TLS.CAFile, "ca-file", "", "PEM CA bundle that verifies an https API (IPA's cafile; default: the system's CAs)")
	f.StringVar(&cfg.TLS.CertFile, "cert-file", "", "PEM client certificate presented to the API (IPA's certfile; needs --key-file)")
	f.StringVar(&cfg.TLS.KeyFile, "key-file", "", "PEM private key of --cert-file (IPA's keyfile)")
	f.BoolVar(&cfg.TLS.InsecureSkipVerify, "insecure", false, "do not verify an https API's certificate (ipa-insecure)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&once, "once", false, "look the node up once and exit: 0 when found, else non-zero with the reason in one line "+
		"(a successful lookup takes the node's agent token, as the agent's own would)")
	f.StringVar(&cmdline, "cmdline", agent.CmdlinePath, "kernel command line file the settings not given as flags are read from")
	return cmd
}
