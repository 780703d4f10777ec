package main

import (
	"fmt"
	"io"
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
		jitter             time.Duration
		sessionTimeout     time.Duration
		maxSessions        int
		rateLimit          float64
		dead, rejectAuth   bool
		seed               uint64
		ipmiBase, machines int
		useQEMU            bool
		qcfg               bmcemu.QEMUConfig
		vmDisk             int
		forwards           []string
		agentAPI, diskDir  string
		diskMiB            int
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
  fields: latency, latency_jitter, failure_rate, max_sessions, session_timeout,
  rate_limit, dead, reject_auth, fail_insert_media, power_state (On/Off)

With --bmc-ports every machine's BMC also has a Redfish port of its own, so
--max-sessions and --rate-limit hold per machine as on real BMCs; the sessions
opened and the most open at once are in GET /emulator/machines and printed at exit.

--nodes-file writes the fleet in 'baremetal create' format (BMC addresses,
credentials and MACs) for enrolment.

Every machine has a Redfish virtual CD (/redfish/v1/Managers/{id}/VirtualMedia/Cd,
also under the System): InsertMedia downloads the image into --state-dir.

--qemu makes every machine a real qemu VM (software emulation, SeaBIOS or with
--uefi-firmware OVMF for machines in UEFI boot mode, one virtio NIC and disk): power on starts it, off kills it (GracefulShutdown presses
its ACPI power button first), reset restarts it; boot override Pxe network-boots
the NIC's stock iPXE (qemu's DHCP names --boot-file), Cd boots the inserted
virtual media, Hdd the disk. The serial console of each is
STATE-DIR/<id>/console.log. The VMs' user-mode network is restricted: they reach
only the --forward GUEST=HOST pairs, e.g.
  --forward 10.0.2.100:6385=127.0.0.1:6385 --boot-file http://10.0.2.100:6385/boot/boot.ipxe`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			if failureRate < 0 || failureRate > 1 {
				return fmt.Errorf("--failure-rate %v is not in [0, 1]", failureRate)
			}
			cfg.Count, cfg.IPMIBasePort, cfg.Seed = machines, ipmiBase, seed
			if maxSessions < 0 || rateLimit < 0 || jitter < 0 || sessionTimeout < 0 {
				return fmt.Errorf("--max-sessions, --rate-limit, --latency-jitter and --session-timeout must not be negative")
			}
			cfg.Knobs = bmcemu.Knobs{Latency: latency, FailureRate: failureRate, Dead: dead, RejectAuth: rejectAuth,
				LatencyJitter: jitter, MaxSessions: maxSessions, SessionTimeout: sessionTimeout, RateLimit: rateLimit}
			cfg.Log = newLogger(stderr, lvl)
			if useQEMU {
				q, err := qemuConfig(qcfg, vmDisk, forwards)
				if err != nil {
					return err
				}
				cfg.QEMU = &q
			} else if len(forwards) > 0 || qcfg.BootFile != "" {
				return fmt.Errorf("--forward and --boot-file need --qemu")
			}
			if agentAPI != "" {
				if cfg.QEMU != nil {
					return fmt.Errorf("--agent-api runs agents for emulated machines; qemu VMs boot their own (--qemu)")
				}
				if diskMiB < 1 {
					return fmt.Errorf("--disk-mib %d is below 1 MiB", diskMiB)
				}
				cfg.Agent = &bmcemu.AgentConfig{APIURL: agentAPI, DiskDir: diskDir, DiskBytes: int64(diskMiB) << 20}
			} else if diskDir != "" {
				return fmt.Errorf("--disk-dir needs --agent-api")
			}
			e, err := bmcemu.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer e.Close()
			defer func() {
				st := e.FleetSessionStats()
				fmt.Fprintf(stdout, "bmc-emulator: Redfish sessions opened %d, most open at once on one BMC %d, logins refused %d, expired %d; calls rate-limited %d, failed transiently %d\n",
					st.Opened, st.MaxOpen, st.Refused, st.Expired, st.RateLimited, st.Transient503)
			}()
			fmt.Fprintf(stdout, "bmc-emulator: %d machines, Redfish at %s/redfish/v1 (user %s), knobs at %s/emulator/machines\n",
				len(e.Machines()), e.URL(), cfg.Username, e.URL())
			if cfg.BMCPorts {
				ms := e.Machines()
				fmt.Fprintf(stdout, "bmc-emulator: every machine's BMC also on its own Redfish port (%s: %s; all in GET /emulator/machines and --nodes-file)\n",
					ms[0].ID, e.RedfishURL(ms[0]))
			}
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
			if cfg.QEMU != nil {
				fmt.Fprintf(stdout, "bmc-emulator: machines are qemu VMs; serial consoles in %s/<id>/console.log\n", e.StateDir())
			}
			if cfg.Agent != nil {
				fmt.Fprintf(stdout, "bmc-emulator: a machine booted from the network runs the deploy agent, which looks its node up at %s\n", agentAPI)
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
	f.DurationVar(&jitter, "latency-jitter", 0, "adds up to this much to --latency, drawn per call (--latency 1s --latency-jitter 2s: 1 to 3 s)")
	f.IntVar(&maxSessions, "max-sessions", 0, "Redfish sessions a BMC holds at once; one more login gets 400 RAC0218 (0: no limit)")
	f.DurationVar(&sessionTimeout, "session-timeout", 0, "a Redfish session idle this long expires (0: never)")
	f.Float64Var(&rateLimit, "rate-limit", 0, "Redfish calls a second a BMC answers, the rest get 503 with Retry-After (0: no limit)")
	f.BoolVar(&cfg.BMCPorts, "bmc-ports", false, "give every machine's BMC its own Redfish port (limits and sessions per machine)")
	f.IntVar(&cfg.BMCBasePort, "bmc-base-port", 0, "first per-machine Redfish port with --bmc-ports (0: free ports)")
	f.BoolVar(&dead, "dead", false, "start with every BMC dead (no answer)")
	f.BoolVar(&rejectAuth, "reject-auth", false, "start with every BMC refusing its credentials")
	f.Uint64Var(&seed, "seed", 1, "seed of MACs, UUIDs and failure draws")
	f.StringVar(&nodesFile, "nodes-file", "", "write the enrolment file (baremetal create format) here")
	f.StringVar(&drv, "nodes-driver", bmcemu.DriverRedfish, "hardware type in the nodes file: redfish or ipmi (needs --ipmi)")
	f.StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error")
	f.StringVar(&cfg.StateDir, "state-dir", "", "machines' files: virtual media, VM disks and consoles (default: a temporary directory)")
	f.BoolVar(&useQEMU, "qemu", false, "make every machine a real qemu VM")
	f.IntVar(&qcfg.MemoryMiB, "vm-memory", 512, "memory of each VM, MiB (--qemu)")
	f.IntVar(&vmDisk, "vm-disk-mib", 1024, "disk of each VM, MiB (--qemu)")
	f.StringVar(&qcfg.BootFile, "boot-file", "", "boot file URL qemu's DHCP hands iPXE on network boot (--qemu)")
	f.StringArrayVar(&forwards, "forward", nil, "GUEST=HOST: a TCP address the VMs reach (10.0.2.x:port) and the loopback address it leads to; repeatable (--qemu)")
	f.StringVar(&qcfg.UEFIFirmware, "uefi-firmware", "", "OVMF code image (e.g. /usr/share/OVMF/OVMF_CODE_4M.fd): machines in UEFI boot mode boot it (--qemu; default: SeaBIOS only)")
	f.BoolVar(&qcfg.NoNetworkBoot, "no-network-boot", false, "VMs without a NIC boot ROM: they boot only from disk or virtual media (--qemu)")
	f.StringVar(&agentAPI, "agent-api", "", "run the deploy agent (in this process) for a machine booted from the network, looking its node up at this Anvil API URL (as anvil demo does)")
	f.StringVar(&diskDir, "disk-dir", "", "the agents' disk files, <dir>/<id>.img, created sparse (--agent-api; default: a temporary directory)")
	f.IntVar(&diskMiB, "disk-mib", 64, "size of each machine's disk file, MiB (--agent-api)")
	f.IntVar(&qcfg.GuestPort, "guest-port", 0, "a guest TCP port reachable from a loopback port per VM (GET /emulator/machines shows it) (--qemu)")
	return cmd
}

// qemuConfig checks the --qemu flags.
func qemuConfig(q bmcemu.QEMUConfig, disk int, forwards []string) (bmcemu.QEMUConfig, error) {
	if disk < 1 {
		return q, fmt.Errorf("--vm-disk-mib %d is below 1 MiB", disk)
	}
	q.DiskBytes = int64(disk) << 20
	if q.MemoryMiB < 16 {
		return q, fmt.Errorf("--vm-memory %d is below 16 MiB", q.MemoryMiB)
	}
	for _, f := range forwards {
		g, h, ok := strings.Cut(f, "=")
		if !ok {
			return q, fmt.Errorf("--forward %q is not GUEST=HOST (e.g. 10.0.2.100:6385=127.0.0.1:6385)", f)
		}
		q.Forwards = append(q.Forwards, bmcemu.Forward{Guest: g, Host: h})
	}
	return q, nil
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
to that file through the agent, as on real hardware. With --virtual-media
the nodes boot the agent as Metal3 has Redfish machines do: the BMC inserts
the deploy ISO (redfish-virtual-media boot interface, deploy_iso) and the
machine boots its virtual CD.
With --qemu every machine is a real qemu VM instead: it network-boots the deploy
ramdisk ('anvil ramdisk build', built on first use) with its NIC's stock iPXE
from Anvil's boot endpoint, the agent in it writes the image to the VM's disk,
and the VM then boots that disk. With --qemu --virtual-media the VMs have no
network boot: Anvil builds an ISO of the ramdisk, the BMC inserts it as a
virtual CD and the VM boots it (redfish-virtual-media boot interface).
Progress is printed as it happens.
Ctrl-C stops everything and removes the temporary files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(cfg.Listen) == "" {
				return fmt.Errorf("--listen must not be empty")
			}
			if k := cfg.Knobs; k.FailureRate < 0 || k.FailureRate > 1 || k.MaxSessions < 0 || k.RateLimit < 0 || k.LatencyJitter < 0 {
				return fmt.Errorf("--bmc-failure-rate must be in [0, 1]; --bmc-max-sessions, --bmc-rate-limit and --bmc-latency-jitter must not be negative")
			}
			if cfg.QEMU && !cmd.Flags().Changed("machines") {
				cfg.Machines = 1 // each is a whole VM in software emulation
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
	f.DurationVar(&cfg.Knobs.LatencyJitter, "bmc-latency-jitter", 0, "adds up to this much to --bmc-latency, drawn per call")
	f.Float64Var(&cfg.Knobs.FailureRate, "bmc-failure-rate", 0, "fraction of BMC calls failing transiently (Redfish 503)")
	f.IntVar(&cfg.Knobs.MaxSessions, "bmc-max-sessions", 0, "Redfish sessions each BMC holds at once (0: no limit)")
	f.Float64Var(&cfg.Knobs.RateLimit, "bmc-rate-limit", 0, "Redfish calls a second each BMC answers (0: no limit)")
	f.BoolVar(&cfg.BMCPorts, "bmc-ports", false, "give every machine's BMC its own Redfish port (limits and sessions per machine)")
	f.StringVar(&cfg.Dir, "dir", "", "keep the database, log and nodes file here (default: a temporary directory)")
	f.StringVar(&cfg.Driver, "driver", bmcemu.DriverRedfish, "the nodes' hardware type: redfish or ipmi (needs --ipmi)")
	f.BoolVar(&cfg.QEMU, "qemu", false, "make every machine a real qemu VM that network-boots the deploy ramdisk (one machine unless -n says otherwise)")
	f.BoolVar(&cfg.VirtualMedia, "virtual-media", false, "boot the deploy ramdisk from an ISO the BMC inserts as a virtual CD (redfish-virtual-media); with --qemu the VMs cannot network-boot")
	f.StringVar(&cfg.Ramdisk, "ramdisk", "", "with --qemu: the directory 'anvil ramdisk build' wrote (default: build it into --dir)")
	f.IntVar(&cfg.VMMemoryMiB, "vm-memory", 512, "with --qemu: memory of each VM, MiB")
	return cmd
}
