// Package bmcemu emulates a fleet of bare-metal machines and their BMCs in one
// process, for demos, tests and benchmarks: every machine is a Redfish system
// on one HTTP server (/redfish/v1/Systems/{id}, basic or session auth, shaped
// like DMTF's public-rackmount1 mockup) and, optionally, an IPMI v2.0
// (lanplus) BMC on its own loopback UDP port (go-ipmi's server package).
//
// Each machine remembers its power state, boot override (device, once or
// continuous, UEFI or Legacy) and the NMIs injected into it (ResetType
// Nmi), and can be made slow, flaky, dead, hostile to credentials or
// unhealthy (Status.Health Warning or Critical), per machine or for all
// (Knobs), through the Go API or the HTTP control endpoint
// /emulator/machines.
//
// A BMC limits its clients as real ones do (limits.go): Knobs.MaxSessions
// (one login more is answered 400 with iDRAC's RAC0218), SessionTimeout
// (idle sessions expire), RateLimit (calls a second, the others 503 with
// Retry-After) and LatencyJitter. With Config.BMCPorts every machine's BMC
// has a Redfish port of its own, so these hold per machine; each BMC counts
// its sessions (opened, open, the most open at once) and refusals
// (SessionStats).
//
// The service has one EventService (events.go) whose Subscriptions
// collection takes POST (Destination an absolute http(s) URL, Protocol
// Redfish, EventTypes among EventTypesForSubscription, default Alert),
// GET and DELETE; HttpHeaders are kept but never shown, and no event is
// ever sent.
//
// Invariants: everything binds to loopback unless the caller names another
// address; no password ever appears in a response body, log line or the
// control endpoint; a machine's state is only changed under its mutex.
//
// With Config.Agent, a machine that powers on (or resets) set to network boot,
// or to its virtual CD holding the deploy ramdisk's image, "boots the
// ramdisk": the deploy agent is started for it (in process, or as
// an `anvil agent` child with RunAgentProcess) with the MACs of its NICs and
// its own file-backed disk, so Anvil's direct deploy runs unchanged; powering
// off or booting another device stops it, and a machine booted from a disk
// holding an image reports "running": "image". The virtual CD holds the
// deploy ramdisk when its image is Anvil's deploy ISO (an ISO 9660 image
// whose isolinux or GRUB configuration passes ipa-api-url=) or no ISO at all
// (a few bytes standing for one, as in tests); any other ISO 9660 image is
// an operating system of its own, a ramdisk deploy's live ISO, and the
// machine reports "running": "live-iso" with no agent. Config.OnBoot is
// called on every boot with the device booted.
//
// Every machine has a BMC Manager (/redfish/v1/Managers/{id}, linked from the
// System's Links.ManagedBy) with a virtual CD drive, VirtualMedia/Cd, also
// reachable under the System as newer BMCs have it, shaped as sushy-tools
// renders it: InsertMedia (or PATCH Image) downloads the image from its URL
// into <StateDir>/<id>/media, a URL it cannot fetch is answered 500 and
// leaves the drive empty; EjectMedia (or PATCH Inserted false) deletes it.
//
// Every System has a Bios (Systems/{id}/Bios: attributes of a small
// Dell-like registry served at /redfish/v1/Registries; PATCHes of
// Bios/Settings are checked whole against it and stay pending until the
// next power on or reset applies them, as on real BMCs; Bios.ResetBios
// makes the defaults pending). The UpdateService's SimpleUpdate fetches its
// ImageURI (loopback http only) in the background behind a Task
// (TaskService/Tasks/{n}: Running, then Completed or Exception) and flashes
// the BIOS or BMC version the image's first line names (component=...
// version=...; by default the BIOS, its minor version bumped as
// sushy-tools does), shown in FirmwareInventory, the System's BiosVersion
// and the Manager's FirmwareVersion. Machine.BIOS, Machine.Firmware and
// Emulator.UpdateTasks read the state back.
//
// With Config.QEMU every machine is a real qemu VM (QEMUConfig): the BMC's
// power and boot override drive the VM (Pxe: the NIC's stock iPXE; Cd: the
// inserted image; Hdd: the VM's disk file), whether through Redfish or IPMI,
// the boot mode picks the firmware (SeaBIOS; OVMF for UEFI when
// QEMUConfig.UEFIFirmware is set), and the machine is off whenever qemu is
// not running. Close kills every VM;
// qemu also dies with the emulator's process (parent-death signal).
package bmcemu
