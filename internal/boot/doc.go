// Package boot is Anvil's network boot service: what Ironic's ipxe and pxe
// boot interfaces get from an HTTP server, dnsmasq and a TFTP server, in one
// package.
//
// A [Service] publishes, per node, an iPXE script reachable by each of the
// node's MAC addresses, and the node's kernel and ramdisk under an
// unguessable per-node path (a random token of at least 128 bits). Images
// come from http(s) URLs or local files, are verified against their
// checksums and kept in a content cache under Config.Root, so fifty nodes
// booting the same ramdisk download it once. [Service.Handler] serves:
//
//	GET {HTTPURL}/boot.ipxe             generic script: chains the per-MAC script of each NIC, else exits to local boot
//	GET {HTTPURL}/mac/{aa-bb-cc-dd-ee-ff} the node's script (ramdisk boot or local boot)
//	GET {HTTPURL}/n/{token}/kernel      the node's kernel (Range and HEAD supported)
//	GET {HTTPURL}/n/{token}/ramdisk     the node's ramdisk
//	GET {HTTPURL}/n/{token}/boot.iso    the node's virtual media ISO (PublishISO)
//
// [Service.PublishISO] serves what a BMC's virtual CD boots: a bootable ISO
// (internal/isoimage: BIOS and UEFI) of the kernel and ramdisk with the
// node's parameters, ipa-api-url and boot_method=vmedia on its command line.
// An ISO is built once per kernel, ramdisk, loaders and command line and
// kept in the cache (iso-{sha256}.iso); each node gets a hard link under its
// own token, deleted by Withdraw. Missing boot loaders are reported with the
// Debian package that provides them ([Service.CheckISOLoaders]).
//
// Invariants:
//   - a MAC belongs to at most one node; publishing a MAC another node holds
//     fails and names that node;
//   - a node's files are served exactly as verified when they were published
//     (they are hard links to, or copies of, the verified cache entries), and
//     everything a node has on disk lives in one directory that
//     [Service.Withdraw] removes;
//   - per-node state persists under Root, so a restarted Anvil serves what was
//     published before;
//   - credentials in image URLs never appear in errors or logs (the password
//     is shown as ***).
//
// As in Ironic, a per-MAC script is served to whoever names the MAC, and it
// holds the node's file URLs; what the token protects against is guessing,
// not a client that knows a node's MAC. Cache entries are kept until removed
// by hand (no expiry yet).
//
// The package knows nodes only by name, MACs and files; it never calls the
// conductor. The optional network services live here too: [ProxyDHCP]
// answers PXE clients of known MACs only (never leasing an address), [TFTP]
// serves the iPXE binaries read-only, and [DnsmasqConfig] renders the
// equivalent dnsmasq configuration for sites that prefer dnsmasq.
package boot
