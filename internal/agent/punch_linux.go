package agent

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole deallocates n bytes of the regular file f from off: they read
// back as zeros and take no disk space (a disk file stays sparse).
func punchHole(f *os.File, off, n int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
