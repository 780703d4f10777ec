// Package agent is Anvil's deploy agent: the program that runs on a machine
// being provisioned, speaking the Ironic Python Agent's (IPA) protocol
// (internal/ipa), so that Ironic drives it as it drives IPA and Anvil's
// conductor drives either. It looks its node up on the API by MAC address,
// heartbeats with the token the lookup handed it, and serves IPA's command
// API — POST /v1/commands/?wait=&agent_token=, GET /v1/commands/ and
// /v1/commands/{id} — with IPA's extensions and commands (standby, image,
// clean, deploy, rescue, log; extensions.go), statuses, result shapes and
// faults (commands.go). Asynchronous commands answer RUNNING at once and are
// polled; the agent heartbeats as soon as one finishes (IPA's
// force_heartbeat). When the lookup finds its node waiting for inspection,
// it posts its inventory (IPA's format) to /v1/continue_inspection.
//
// In a deploy ramdisk the agent runs without flags: Cmdline reads its
// settings from the kernel command line under IPA's names (ipa-api-url=,
// BOOTIF=, ipa-advertise-host=, ...), in one place (cmdline.go), and
// InstallDisk picks the disk as IPA does when none is named. A lookup that
// fails (API unreachable, no node for these MACs, refused) is logged as a
// warning with its reason, the MACs and the API URL, and retried with a
// bounded, jittered back-off; LookupOnce (`anvil agent --once`) is one try
// (lookup.go).
//
// The image command (writeImage, its parameters in ImageRequest: Anvil's
// flat form or IPA's image_info) chooses the install disk by Ironic's root
// device hints among the --disk disks (or the machine's, from /sys),
// writes a whole-disk image — then a config drive in a partition at the
// disk's end — or partitions the disk as IPA does and writes a partition
// image into its root partition; qcow2 is converted with qemu-img. The
// disk work itself is package disk's.
//
// image.install_bootloader (bootloader.go) follows IPA: booted by UEFI, the
// agent finds the image's EFI system partition (GPT type), reads its FAT
// file system in place (fat.go) for IPA's boot loader names or a shim CSV,
// and writes the UEFI boot entry itself — an EFI_LOAD_OPTION with an
// HD()/File() device path, first in BootOrder, through efivarfs (efivars.go,
// mounted if the ramdisk has not; --efivars names another directory in
// tests); a whole-disk image without a root UUID needs nothing more.
// Installing GRUB into a partition image is not done yet (refused).
//
// Invariants: the token is never logged; a command is accepted only with
// the lookup's token in the agent_token query parameter (IPA's only place
// for it), results are readable without one (Ironic 21.4 polls so) but never
// with a wrong one; one command runs at a time (409 otherwise); a new token
// (a new boot, to the conductor) empties the command history; an image is
// verified against the checksum the conductor chose (ipa.ImageInfoChecksum)
// and fsynced before prepare_image reports success; invalid root device hints fail
// before anything is written.
package agent
