//go:build !linux

package agent

import (
	"errors"
	"os"
)

// punchHole is Linux's fallocate(PUNCH_HOLE); elsewhere zeros are written.
func punchHole(*os.File, int64, int64) error { return errors.ErrUnsupported }
