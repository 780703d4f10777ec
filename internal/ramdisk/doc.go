// Package ramdisk builds Anvil's deploy ramdisk: a Linux kernel and an
// initramfs (gzip-compressed cpio "newc" archive) holding a static busybox,
// the static `anvil` binary, the kernel's virtio modules and a generic /init
// that mounts proc, sys and dev, loads the modules, configures every NIC with
// DHCP (busybox udhcpc) and runs `anvil agent` with no flags: the agent reads
// its settings (ipa-api-url, BOOTIF, ipa-advertise-host, ...) from the kernel
// command line, so one ramdisk serves every node.
//
// The kernel and busybox come from Debian packages fetched with
// `apt-get download` and unpacked with `dpkg-deb -x` into a cache directory
// (Fetcher), or from files the caller names. The archive writer (WriteNewc)
// and the /init script (InitScript) are pure and tested alone.
//
// Invariants: the modules are loaded in the order given (dependency order);
// the anvil binary put in the archive is statically linked (a dynamic one
// could not run in a ramdisk without a libc); a cached download is used only
// once its "done" marker exists, so an interrupted fetch is redone.
package ramdisk
