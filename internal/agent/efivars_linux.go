package agent

import "golang.org/x/sys/unix"

// mountEFIVars mounts the kernel's efivarfs at dir.
func mountEFIVars(dir string) error {
	return unix.Mount("efivarfs", dir, "efivarfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}
