// Package efitest builds UEFI whole-disk images for tests: a GPT disk
// (written by package disk, go-diskfs) whose first partition is an EFI
// system partition holding the given files, in a FAT file system made by
// Debian's mkfs.fat (dosfstools) and filled with mtools, as an image
// builder would; optionally a Linux root partition after it. It is test
// support: no production code imports it.
package efitest
