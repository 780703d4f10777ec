package disk

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDirect opens path for writing with O_DIRECT (no page cache).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
}

// startWriteback asks the kernel to start writing the range out now
// (sync_file_range SYNC_FILE_RANGE_WRITE, which does not wait), so that
// the final fsync has little left to flush.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// rereadPartitions asks the kernel to re-read a block device's partition
// table (BLKRRPART), as IPA's trigger_device_rescan does with partprobe.
// Regular files are left alone; a refusal (a busy disk) is ignored: the
// instance's kernel reads the table when it boots, and the agent writes at
// offsets of the whole disk, needing no partition device nodes.
func rereadPartitions(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeDevice != 0 {
		_ = unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0)
	}
}
