// Package pxe holds the network boot interfaces "ipxe" and "pxe", Ironic's
// names: they boot a node into the agent ramdisk over the network and, once
// the instance is on the disk, make it boot from disk.
//
// They do not serve files themselves. They ask a Publisher (the boot
// service, internal/boot, handed in by internal/server) to publish a node's
// ramdisk — kernel, initramfs and kernel command line, keyed by the MACs of
// the node's ports — or a local-boot script, and to withdraw them; and they
// set the node's boot device through its management interface.
//
// The node's driver_info names the ramdisk as Ironic's does: deploy_kernel
// and deploy_ramdisk (deploy, clean, inspect, service), rescue_kernel and
// rescue_ramdisk (rescue); kernel_append_params in instance_info, else in
// driver_info, else the configured default, adds to the kernel command line
// ("%default%" in it stands for that default).
//
// "pxe" differs from "ipxe" as in Ironic only in how the firmware reaches
// iPXE: chain-loaded over TFTP instead of booting it directly. Both publish
// the same iPXE script; Boot.Mode tells them apart. A "pxe" node needs the
// boot service's TFTP server running; the interface does not check that.
//
// A node without ports cannot network boot: PrepareRamdisk and
// PrepareInstance refuse it with Ironic's text. (Ironic's validate reports
// it too; Anvil's Validate sees only the node, so it is reported when the
// ramdisk is prepared, still before the node is powered on.)
package pxe
