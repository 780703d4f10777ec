package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/ramdisk"
)

// newRamdisk is `anvil ramdisk build`: the deploy kernel and initramfs.
func newRamdisk(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ramdisk",
		Short: "Build the deploy ramdisk the agent runs in",
	}
	var o ramdisk.Options
	build := &cobra.Command{
		Use:   "build",
		Short: "Build vmlinuz and initramfs (busybox, this anvil, virtio modules, a generic /init)",
		Long: `Build the deploy ramdisk into --output: vmlinuz (Debian's kernel, fetched with
apt-get download and cached, or --kernel) and initramfs (gzip cpio holding a
static busybox, the anvil binary, the kernel's virtio modules and an /init
that configures every NIC with DHCP and runs "anvil agent" with no flags).
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
	f.StringVar(&o.OutputDir, "output", "", "directory that receives vmlinuz and initramfs (required)")
	f.StringVar(&o.Anvil, "anvil", "", "static anvil binary to put in the ramdisk (default: this executable)")
	f.StringVar(&o.Kernel, "kernel", "", "kernel image (default: Debian's linux-image-amd64 dependency, fetched)")
	f.StringVar(&o.ModulesDir, "modules", "", "with --kernel: directory holding its virtio .ko files (default: none, virtio built in)")
	f.StringVar(&o.Busybox, "busybox", "", "static busybox (default: Debian's busybox-static, fetched)")
	f.StringVar(&o.CacheDir, "cache-dir", ramdisk.DefaultCacheDir(), "where downloaded packages are kept")
	_ = build.MarkFlagRequired("output")
	root.AddCommand(build)
	return root
}

func printRamdisk(w io.Writer, r ramdisk.Result) {
	from := "given kernel"
	if r.KernelPackage != "" {
		from = r.KernelPackage
	}
	mods := "none"
	if len(r.Modules) > 0 {
		mods = strings.Join(r.Modules, " ")
	}
	fmt.Fprintf(w, "kernel     %s (%s)\n           sha256 %s\n", r.Kernel, from, r.KernelSHA256)
	fmt.Fprintf(w, "initramfs  %s (modules: %s)\n           sha256 %s\n", r.Initramfs, mods, r.InitramfsSHA256)
	fmt.Fprintf(w, "driver_info for each node (the boot interface takes a path or an http(s) URL):\n"+
		"  deploy_kernel=%s\n  deploy_ramdisk=%s\n", r.Kernel, r.Initramfs)
	fmt.Fprintf(w, "e.g. anvil node set NODE --driver-info deploy_kernel=%s --driver-info deploy_ramdisk=%s\n",
		r.Kernel, r.Initramfs)
	fmt.Fprintf(w, "kernel parameters the agent reads: ipa-api-url= and BOOTIF= (added by the boot endpoint),\n"+
		"  ipa-advertise-host=, ipa-advertise-port= (behind NAT), anvil.min-disk-size= (small test disks)\n")
}
