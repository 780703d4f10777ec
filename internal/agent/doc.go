// Package agent is Anvil's deploy agent: the program that runs on a machine
// being provisioned (Ironic's IPA). It looks its node up on the API by MAC
// address, heartbeats with the one-time token the lookup handed it, and
// serves an IPA-style command API (POST /v1/commands, GET /v1/commands/{id})
// through which the conductor writes images, erases disks and reads the
// hardware inventory. Commands run asynchronously; the conductor polls them.
//
// In a deploy ramdisk the agent runs without flags: Cmdline reads its
// settings from the kernel command line under IPA's names (ipa-api-url=,
// BOOTIF=, ipa-advertise-host=, ...), in one place (cmdline.go), and
// InstallDisk picks the disk as IPA does when none is named.
//
// The image command (writeImage, its parameters in ImageRequest: Anvil's
// flat form or IPA's image_info) chooses the install disk by Ironic's root
// device hints among the --disk disks (or the machine's, from /sys),
// writes a whole-disk image — then a config drive in a partition at the
// disk's end — or partitions the disk as IPA does and writes a partition
// image into its root partition; qcow2 is converted with qemu-img. The
// disk work itself is package disk's.
//
// Invariants: the token is never logged; every command request must carry
// agentapi.CommandKey(token) in the X-Agent-Token header (or the agent_token
// query parameter); an image is verified against its checksum and length
// and fsynced before write_image reports success; invalid root device hints
// fail before anything is written.
package agent
