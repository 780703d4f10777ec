// Package localfile decides which local files Anvil may read on a
// client's behalf: the one check between a file:// URL or path a node
// names (deploy kernel, ramdisk, the images of a boot ISO) and the bytes
// the boot endpoint then serves to anyone who asks.
//
// Roots are the directories of Ironic's [conductor]file_url_allowed_paths
// (anvil serve --file-url-allowed-paths). Open resolves a path the way the
// kernel will (absolute, cleaned, every symbolic link followed), refuses
// it unless it is inside a root, opens the resolved path without following
// a final link, and checks again what was actually opened (its
// /proc/self/fd link on Linux, else the identity of the resolved path), so
// a link or directory swapped between the check and the open cannot lead
// outside the roots.
package localfile
