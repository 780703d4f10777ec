package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/anvil-metal/anvil/internal/ramdisk"
)

// newRamdisk is `anvil ramdisk build`: the deploy kernel and initramfs; and
// `anvil ramdisk coldplug`, which the ramdisk's /init runs.
func newRamdisk(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ramdisk",
		Short: "Build the deploy ramdisk the agent runs in",
	}
	var o ramdisk.Options
	build := &cobra.Command{
		Use:   "build",
		Short: "Build vmlinuz and initramfs (busybox, this anvil, server NIC and storage drivers, a generic /init)",
		Long: `Build the deploy ramdisk into --output: vmlinuz (Debian's kernel, fetched with
apt-get download and cached, or --kernel) and initramfs (gzip cpio holding a
static busybox, the anvil binary, the kernel modules of --profile (server:
common server NICs and storage controllers plus virtio; vm: virtio and qemu's
emulated devices) and --modules with their dependencies, the firmware they
request that Debian's main archive (firmware-linux-free) or --firmware-dir
has, and an /init that loads drivers by modalias as udev does, configures
every NIC with a link by DHCP and runs "anvil agent" with no flags).
A manifest, ramdisk.json (kernel version, modules with sizes, firmware
included and missing, sizes and sha256), is written beside them and printed.
The agent reads its settings from the kernel command line (ipa-api-url=,
BOOTIF=, ipa-advertise-host=, ...), so one ramdisk serves every node.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = newLogger(stderr, slog.LevelInfo)
			r, err := ramdisk.Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			printRamdisk(stdout, r)
			return nil
		},
	}
	f := build.Flags()
	f.StringVar(&o.OutputDir, "output", "", "directory that receives vmlinuz, initramfs and ramdisk.json (required)")
	f.StringVar(&o.Anvil, "anvil", "", "static anvil binary to put in the ramdisk (default: this executable)")
	f.StringVar(&o.Kernel, "kernel", "", "kernel image (default: Debian's linux-image-amd64 dependency, fetched)")
	f.StringVar(&o.ModulesDir, "modules-dir", "", "with --kernel: its module tree, lib/modules/RELEASE (uncompressed .ko files; default: none)")
	f.StringVar(&o.Profile, "profile", ramdisk.DefaultProfile, "module set: "+strings.Join(ramdisk.ProfileNames(), " or ")+" (see docs/ramdisk.md)")
	f.StringSliceVar(&o.Modules, "modules", nil, "more kernel modules by name (comma-separated or repeated); their dependencies are added")
	f.StringArrayVar(&o.FirmwareDirs, "firmware-dir", nil, "directory searched for the firmware the modules request, like /lib/firmware (repeatable)")
	f.BoolVar(&o.GRUB, "grub", false, "add this machine's GRUB 2 (grub2-common, grub-pc-bin, grub-efi-amd64-bin; about 5 MiB), with which the agent installs GRUB into partition images that carry none (local boot)")
	f.StringVar(&o.Busybox, "busybox", "", "static busybox (default: Debian's busybox-static, fetched)")
	f.StringVar(&o.CacheDir, "cache-dir", ramdisk.DefaultCacheDir(), "where downloaded packages are kept")
	_ = build.MarkFlagRequired("output")
	root.AddCommand(build, newColdplug(stdout))
	return root
}

// newColdplug is `anvil ramdisk coldplug`: the ramdisk's /init loads the
// drivers of the devices present by modalias with it.
func newColdplug(stdout io.Writer) *cobra.Command {
	var dir, sys string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "coldplug",
		Short: "Load the drivers of the devices present by modalias, as udev does at boot (run by the ramdisk's /init)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				var u unix.Utsname
				if err := unix.Uname(&u); err != nil {
					return err
				}
				dir = filepath.Join("/lib/modules", unix.ByteSliceToString(u.Release[:]))
			}
			read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
			dep, err := read("modules.dep")
			if err != nil {
				return fmt.Errorf("coldplug: %w", err)
			}
			alias, err := read("modules.alias")
			if err != nil {
				return fmt.Errorf("coldplug: %w", err)
			}
			soft, _ := read("modules.softdep")
			idx, err := ramdisk.ParseDepIndex(dep, alias, soft)
			if err != nil {
				return fmt.Errorf("coldplug: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			start := time.Now()
			res, err := ramdisk.Coldplug{SysDir: sys, Index: idx, Load: ramdisk.LoadModule(dir),
				Log: func(msg string) { fmt.Fprintf(stdout, "anvil-ramdisk: coldplug: %s\n", msg) }}.Run(ctx)
			fmt.Fprintf(stdout, "anvil-ramdisk: coldplug: %d modules loaded, %d failed, %d scans, %v\n",
				len(res.Loaded), len(res.Failed), res.Scans, time.Since(start).Round(time.Millisecond))
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "module directory holding modules.dep and modules.alias (default /lib/modules/RELEASE)")
	cmd.Flags().StringVar(&sys, "sys", "/sys", "where sysfs is mounted")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "give up after this long")
	return cmd
}

func printRamdisk(w io.Writer, r ramdisk.Result) {
	m := r.Manifest
	b, _ := json.MarshalIndent(m, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
	from := "given kernel"
	if m.KernelPackage != "" {
		from = m.KernelPackage
	}
	names := make([]string, len(m.Modules))
	for i, mod := range m.Modules {
		names[i] = mod.Name
	}
	mods := "none"
	if len(names) > 0 {
		mods = strings.Join(names, " ")
	}
	fmt.Fprintf(w, "manifest   %s\n", r.ManifestPath)
	fmt.Fprintf(w, "kernel     %s (%s, %s)\n           sha256 %s\n", r.Kernel, from, m.KernelVersion, m.Kernel.SHA256)
	fmt.Fprintf(w, "initramfs  %s (%d bytes; profile %s, %d modules: %s)\n           sha256 %s\n",
		r.Initramfs, m.Initramfs.Size, m.Profile, len(names), mods, m.Initramfs.SHA256)
	if len(m.GRUB) > 0 {
		fmt.Fprintf(w, "grub       %d files, %d bytes (grub-install and its libraries, %s)\n", len(m.GRUB), m.GRUBSize,
			strings.Join(ramdisk.GRUBPlatforms, ", "))
	}
	for _, f := range m.FirmwareMissing {
		fmt.Fprintf(w, "firmware   %s (requested by %s) not included: not in Debian's main archive or --firmware-dir\n",
			f.Name, strings.Join(f.Modules, ","))
	}
	fmt.Fprintf(w, "driver_info for each node (the boot interface takes a path or an http(s) URL):\n"+
		"  deploy_kernel=%s\n  deploy_ramdisk=%s\n", r.Kernel, r.Initramfs)
	fmt.Fprintf(w, "e.g. anvil node set NODE --driver-info deploy_kernel=%s --driver-info deploy_ramdisk=%s\n",
		r.Kernel, r.Initramfs)
	fmt.Fprintf(w, "kernel parameters the agent reads: ipa-api-url= and BOOTIF= (added by the boot endpoint),\n"+
		"  ipa-advertise-host=, ipa-advertise-port= (behind NAT), anvil.min-disk-size= (small test disks)\n")
}
