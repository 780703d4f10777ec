package disk

import (
	"os"
	"syscall"
)

// openDirect opens path for writing with O_DIRECT (no page cache).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
}
