//go:build !unix

package hostlock

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// lockFile does nothing where flock(2) is missing: SQLite there runs one
// process, and the claim is not enforced.
func lockFile(*os.File) error { return nil }
