// Package testos builds a small test operating system as a UEFI whole-disk
// image, from Debian's packages available offline (linux-image-amd64's
// kernel and modules, busybox-static, grub-efi-amd64-bin, dosfstools,
// mtools): a GPT disk whose EFI system partition holds GRUB at the
// removable-media path \EFI\BOOT\BOOTX64.EFI (grub-mkstandalone), the
// kernel and an initramfs. The system does what cloud-init does first on a
// deployed machine: it finds the config drive (label config-2), reads
// openstack/latest/meta_data.json, sets its hostname and prints it and its
// first public key's fingerprint (OpenSSH's SHA256 form) on the serial
// console, then powers off. BuildPartition makes the same system as a
// partition image: an ext4 root file system (mkfs.ext4 -d) plus the kernel
// and a ramdisk that mounts it. There is no GRUB inside the partition
// image yet. It is test support: no production code imports it.
package testos
