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
