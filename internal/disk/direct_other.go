//go:build !linux

package disk

import (
	"errors"
	"os"
)

// openDirect is Linux only; elsewhere writes go through the page cache.
func openDirect(string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is Linux only")
}

// startWriteback is Linux only; elsewhere the final fsync flushes all.
func startWriteback(*os.File, int64, int64) {}

// rereadPartitions is Linux only.
func rereadPartitions(*os.File) {}
