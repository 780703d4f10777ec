package localfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Option is the setting that lists the roots, named in refusals so an
// operator knows what to change.
const Option = "--file-url-allowed-paths"

// ErrNotAllowed is wrapped by every refusal of a path outside the roots.
var ErrNotAllowed = errors.New("local file outside the allowed directories")

// Roots is a set of directories local files may be read from. The zero
// value allows nothing.
type Roots struct {
	dirs []string // absolute, cleaned, symbolic links resolved
}

// NewRoots resolves dirs (each must exist and be a directory). An empty
// list allows nothing.
func NewRoots(dirs []string) (*Roots, error) {
	r := &Roots{}
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		real, err := resolve(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Option, err)
		}
		st, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Option, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: %s is not a directory", Option, d)
		}
		r.dirs = append(r.dirs, real)
	}
	return r, nil
}

// Guard refuses roots that would expose one of files (the database, key
// files): an error naming the first file found inside a root. Files that
// do not exist yet are judged by their directory.
func (r *Roots) Guard(files ...string) error {
	for _, f := range files {
		if strings.TrimSpace(f) == "" {
			continue
		}
		real, err := resolve(f)
		if err != nil {
			dir, derr := resolve(filepath.Dir(f))
			if derr != nil {
				continue
			}
			real = filepath.Join(dir, filepath.Base(f))
		}
		if r.inside(real) {
			return fmt.Errorf("%s: %s lies inside an allowed directory, which the boot endpoint would serve to anyone", Option, f)
		}
	}
	return nil
}

// Dirs returns the resolved roots.
func (r *Roots) Dirs() []string { return append([]string(nil), r.dirs...) }

// resolve is path absolute, cleaned and with every symbolic link followed.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(abs))
	if err != nil {
		return "", err
	}
	return filepath.Clean(real), nil
}

// inside reports whether the resolved path real is one of the roots or
// below one.
func (r *Roots) inside(real string) bool {
	for _, dir := range r.dirs {
		if rel, err := filepath.Rel(dir, real); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// refusal is the error for path (as the client named it) outside the roots.
func (r *Roots) refusal(path string) error {
	allowed := "none"
	if len(r.dirs) > 0 {
		allowed = strings.Join(r.dirs, ", ")
	}
	return fmt.Errorf("%w: %s is not under %s (%s)", ErrNotAllowed, path, Option, allowed)
}

// Check reports whether path may be read, resolving it as Open does; it
// is for validation before any work (Open checks again).
func (r *Roots) Check(path string) error {
	_, err := r.allowed(path)
	return err
}

// allowed is path resolved, or the refusal. A path that does not resolve
// is refused as outside unless its directory is inside a root: the absence
// of a file elsewhere must not tell a client more than a refusal does.
func (r *Roots) allowed(path string) (string, error) {
	real, err := resolve(path)
	if err != nil {
		if dir, derr := resolve(filepath.Dir(path)); derr == nil && r.inside(dir) {
			return "", fmt.Errorf("%s: %w", path, errors.Unwrap(err))
		}
		return "", r.refusal(path)
	}
	if !r.inside(real) {
		return "", r.refusal(path)
	}
	return real, nil
}

// Open opens path for reading if it is a regular file inside the roots:
// the one function by which Anvil reads a local file a client named.
func (r *Roots) Open(path string) (*os.File, error) {
	real, err := r.allowed(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, r.refusal(path)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if !r.opened(f, real, st) {
		f.Close()
		return nil, r.refusal(path)
	}
	return f, nil
}

// opened re-checks, after the open, that f is the file at a path inside
// the roots: the kernel's name for the descriptor where /proc has it, else
// that real still resolves inside the roots to the same file.
func (r *Roots) opened(f *os.File, real string, st os.FileInfo) bool {
	if name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil && filepath.IsAbs(name) {
		return r.inside(filepath.Clean(name))
	}
	again, err := resolve(real)
	if err != nil || !r.inside(again) {
		return false
	}
	now, err := os.Stat(again)
	return err == nil && os.SameFile(now, st)
}
