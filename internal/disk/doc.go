// Package disk is what the deploy agent does to disks, apart from the
// protocol: it finds the disks (Discover from /sys and the udev database,
// FileDisk for regular files standing in for disks), chooses the install
// disk by Ironic's root device hints (ParseHints, Select — IPA's
// device_hints.py rules, operators and messages), lays out partition
// images as IPA's make_partitions does (Layout, WriteTable), builds and
// unpacks config drives (BuildConfigDrive: an ISO 9660 labelled config-2;
// FetchConfigDrive: Ironic's gzip+base64 string or a URL to one) and adds
// the config drive partition at the end of a whole-disk image
// (AddConfigDrivePartition), converts qcow2 images (ConvertQcow2, with
// qemu-img), and streams images to disk (Copy).
//
// Invariants: Copy reads, hashes and writes in a pipeline of large aligned
// buffers (O_DIRECT on block devices), never writes past its Target, and
// fsyncs before it returns success; invalid hints fail before any device
// is chosen; nothing here logs.
package disk
