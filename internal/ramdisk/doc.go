// Package ramdisk builds Anvil's deploy ramdisk: a Linux kernel and an
// initramfs (gzip-compressed cpio "newc" archive) holding a static busybox,
// the static `anvil` binary, the kernel modules of a profile (server NICs
// and storage controllers plus virtio, or a VM's devices) and any named
// ones with their dependencies, the firmware they request that is at hand,
// and a generic /init. /init mounts proc, sys and dev, loads the drivers of
// the devices present by modalias (`anvil ramdisk coldplug`, Coldplug: as
// udev does at boot, no module list), configures every NIC with a link by
// DHCP (busybox udhcpc) and runs `anvil agent` with no flags: the agent
// reads its settings (ipa-api-url, BOOTIF, ipa-advertise-host, ...) from the
// kernel command line, so one ramdisk serves every node. Build writes a
// manifest, ramdisk.json, beside the files.
//
// The kernel with its module tree, Debian's main-archive firmware
// (firmware-linux-free) and busybox come from Debian packages fetched with
// `apt-get download` and unpacked with `dpkg-deb -x` into a cache directory
// (Fetcher), or from files the caller names. Module metadata is read from
// each .ko's .modinfo section (ReadModInfo); Tree.Resolve adds
// dependencies and DepFiles writes the modules.dep, modules.alias and
// modules.softdep depmod would (the .deb carries none). The archive writer
// (WriteNewc), the modalias matcher (DepIndex), the coldplug loop (over a
// sysfs directory and a Load function) and the /init script are pure and
// tested alone; LoadModule (finit_module) is the I/O edge.
//
// Invariants: a module is staged and loaded after its dependencies; modules
// of two kernel releases are refused; the anvil binary put in the archive
// is statically linked (a dynamic one could not run in a ramdisk without a
// libc); a cached download is used only once its "done" marker exists, so
// an interrupted fetch is redone.
package ramdisk
