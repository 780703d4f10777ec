// Package isoimage builds the bootable ISO that the redfish-virtual-media
// boot interface inserts into a BMC's virtual CD: an ISO 9660 image (Rock
// Ridge names) with two El Torito boot entries, one for BIOS and one for
// UEFI, both starting the same kernel and initramfs with the same command
// line (what Ironic's image_utils.prepare_deploy_iso builds with xorriso; here
// github.com/diskfs/go-diskfs writes it, no external tool runs).
//
// The boot loaders come from Debian packages and are found on disk
// ([Loaders], [FindLoaders]); Anvil ships none:
//
//   - BIOS: ISOLINUX (isolinux.bin from package isolinux, ldlinux.c32 from
//     syslinux-common), no-emulation boot with a boot-info table, reading
//     /isolinux/isolinux.cfg;
//   - UEFI: an EFI system partition image (FAT, written by go-diskfs) whose
//     /EFI/BOOT/BOOTX64.EFI is Debian's GRUB for CD boot (gcdx64.efi from
//     grub-efi-amd64-bin). Its built-in configuration finds the disc by
//     /.disk/info and reads /boot/grub/grub.cfg, which this package writes.
//
// Layout of the image:
//
//	/vmlinuz, /initrd          the kernel and the initramfs
//	/isolinux/                 isolinux.bin, ldlinux.c32, isolinux.cfg (BIOS)
//	/boot/grub/grub.cfg        GRUB's menu (UEFI)
//	/boot/efiboot.img          the EFI system partition image (El Torito EFI entry)
//	/.disk/info                the marker GRUB searches for
//
// Invariants: Build writes the image next to its destination and renames
// it into place, so a reader never sees a partial ISO; a command line with
// control characters or quotes that would break either loader's syntax is
// refused rather than escaped.
package isoimage
