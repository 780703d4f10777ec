package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/demo"
)

// hardwareCommands are the commands that stand in for hardware
// (`anvil bmc-emulator`, `anvil demo`).
func hardwareCommands(stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{newBMCEmulator(stdout, stderr), newDemo(stdout)}
}

func newBMCEmulator(stdout, stderr io.Writer) *cobra.Command {
	var (
		cfg                bmcemu.Config
		nodesFile, drv     string
		logLevel           string
		latency            time.Duration
		failureRate        float64
		dead, rejectAuth   bool
		seed               uint64
		ipmiBase, machines int
	)
	cmd := &cobra.Command{
		Use:   "bmc-emulator",
		Short: "Emulate a fleet of machines and their BMCs (Redfish, optionally IPMI) on loopback",
		Long: `Emulate N machines in one process: each is a Redfish system on one HTTP server
(/redfish/v1/Systems/{id}, basic or session auth) and, with --ipmi, an IPMI
lanplus BMC on its own UDP port. Power state and boot device are remembered.

Knobs apply to all machines from flags, or per machine at run time:
  curl -X PATCH http://ADDR/emulator/machines/node-03 -d '{"dead": true}'
  curl -X PATCH http://ADDR/emulator/machines -d '{"latency": "50ms", "failure_rate": 0.1}'
  fields: latency, failure_rate, dead, reject_auth, power_state (On/Off)

--nodes-file writes the fleet in 'baremetal create' format (BMC addresses,
credentials and MACs) for enrolment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			if failureRate < 0 || failureRate > 1 {
				return fmt.Errorf("--failure-rate %v is not in [0, 1]", failureRate)
			}
			cfg.Count, cfg.IPMIBasePort, cfg.Seed = machines, ipmiBase, seed
			cfg.Knobs = bmcemu.Knobs{Latency: latency, FailureRate: failureRate, Dead: dead, RejectAuth: rejectAuth}
			cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
			e, err := bmcemu.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer e.Close()
			fmt.Fprintf(stdout, "bmc-emulator: %d machines, Redfish at %s/redfish/v1 (user %s), knobs at %s/emulator/machines\n",
				len(e.Machines()), e.URL(), cfg.Username, e.URL())
			if cfg.IPMI {
				ms := e.Machines()
				fmt.Fprintf(stdout, "bmc-emulator: IPMI lanplus (cipher suite 3) on %s, one UDP port per machine (%s: %d; all in GET /emulator/machines)\n",
					cfg.IPMIHost, ms[0].ID, ms[0].Status().IPMIPort)
			}
			if nodesFile != "" {
				if err := e.WriteNodesFile(nodesFile, drv); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "bmc-emulator: nodes file %s (enrol: baremetal create %s)\n", nodesFile, nodesFile)
			} else if cfg.Password != "" {
				fmt.Fprintln(stdout, "bmc-emulator: every BMC takes the password given with --password")
			} else {
				fmt.Fprintln(stdout, "bmc-emulator: the password is random: use --nodes-file to get it, or set --password")
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVarP(&machines, "count", "n", 10, "machines to emulate")
	f.StringVar(&cfg.NamePrefix, "prefix", "node-", "machine ids are PREFIX01, PREFIX02, ...")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8000", "Redfish HTTP address")
	f.BoolVar(&cfg.IPMI, "ipmi", false, "also serve an IPMI endpoint per machine (UDP, loopback)")
	f.StringVar(&cfg.IPMIHost, "ipmi-host", "127.0.0.1", "address the IPMI endpoints bind to")
	f.IntVar(&ipmiBase, "ipmi-base-port", 0, "first IPMI port, one per machine (0: free ports)")
	f.StringVar(&cfg.Username, "username", "admin", "BMC user name")
	f.StringVar(&cfg.Password, "password", "", "BMC password (default: random, written to --nodes-file)")
	f.DurationVar(&latency, "latency", 0, "added to every BMC call (e.g. 50ms)")
	f.Float64Var(&failureRate, "failure-rate", 0, "fraction of calls failing transiently (Redfish 503, IPMI dropped)")
	f.BoolVar(&dead, "dead", false, "start with every BMC dead (no answer)")
	f.BoolVar(&rejectAuth, "reject-auth", false, "start with every BMC refusing its credentials")
	f.Uint64Var(&seed, "seed", 1, "seed of MACs, UUIDs and failure draws")
	f.StringVar(&nodesFile, "nodes-file", "", "write the enrolment file (baremetal create format) here")
	f.StringVar(&drv, "nodes-driver", bmcemu.DriverRedfish, "hardware type in the nodes file: redfish or ipmi (needs --ipmi)")
	f.StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error")
	return cmd
}

func newDemo(stdout io.Writer) *cobra.Command {
	cfg := demo.Config{Out: stdout}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run Anvil with 10 emulated machines enrolled, and print what to type next",
		Long: `Start, in one process, Anvil (API and conductor on a throwaway SQLite
database) and the BMC emulator; enrol the machines with the redfish driver and
their ports and deploy_interface "direct"; print the commands that walk a
machine from enroll to active. A machine set to network boot runs "anvil
agent" with its own file-backed disk, so a deploy streams the demo's image
to that file through the agent, as on real hardware.
Ctrl-C stops everything and removes the temporary files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(cfg.Listen) == "" {
				return fmt.Errorf("--listen must not be empty")
			}
			return demo.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&cfg.Machines, "machines", "n", 10, "emulated machines")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:6385", "API address")
	f.StringVar(&cfg.BMCListen, "bmc-listen", "127.0.0.1:0", "BMC emulator address (port 0: a free one)")
	f.BoolVar(&cfg.IPMI, "ipmi", false, "also give every machine an IPMI endpoint")
	f.DurationVar(&cfg.Latency, "bmc-latency", 0, "added to every BMC call")
	f.StringVar(&cfg.Dir, "dir", "", "keep the database, log and nodes file here (default: a temporary directory)")
	return cmd
}
