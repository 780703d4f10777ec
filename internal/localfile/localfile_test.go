package localfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anvil-metal/anvil/internal/localfile"
)

// TestOpen: only regular files inside a root are opened, however the path
// is spelled (.., symbolic links in the file or a directory, a link to the
// root's parent); everything else is refused naming the option.
func TestOpen(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "images")
	outside := filepath.Join(base, "private")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "vmlinuz"), "kernel")
	write(filepath.Join(root, "sub", "initrd"), "ramdisk")
	write(filepath.Join(outside, "anvil.db"), "database")
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "anvil.db"), filepath.Join(root, "escape"))
	link("../private", filepath.Join(root, "updir"))
	link("/etc", filepath.Join(root, "etc"))
	link("vmlinuz", filepath.Join(root, "alias"))
	link(root, filepath.Join(base, "images-link"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	roots, err := localfile.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string // want: content, or "" for a refusal
		notRegular       bool
	}{
		{"file in the root", filepath.Join(root, "vmlinuz"), "kernel", false},
		{"file in a subdirectory", filepath.Join(root, "sub", "initrd"), "ramdisk", false},
		{"link inside the root", filepath.Join(root, "alias"), "kernel", false},
		{"through a link to the root", filepath.Join(base, "images-link", "vmlinuz"), "kernel", false},
		{"dot segments that stay inside", filepath.Join(root, "sub") + "/../vmlinuz", "kernel", false},
		{"/etc/shadow", "/etc/shadow", "", false},
		{"/etc/passwd", "/etc/passwd", "", false},
		{"a file next to the root", filepath.Join(outside, "anvil.db"), "", false},
		{"dot-dot out of the root", root + "/../private/anvil.db", "", false},
		{"dot-dot out of a subdirectory", root + "/sub/../../private/anvil.db", "", false},
		{"link to a file outside", filepath.Join(root, "escape"), "", false},
		{"link to a directory outside", filepath.Join(root, "updir", "anvil.db"), "", false},
		{"link to /etc", filepath.Join(root, "etc", "passwd"), "", false},
		{"relative path", "../../../../../../etc/passwd", "", false},
		{"missing outside", filepath.Join(outside, "nope"), "", false},
		{"the root itself", root, "", true},
		{"a fifo", filepath.Join(root, "fifo"), "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := roots.Open(c.path)
			if c.want != "" {
				if err != nil {
					t.Fatalf("Open(%s): %v", c.path, err)
				}
				defer f.Close()
				b, _ := io.ReadAll(f)
				if string(b) != c.want {
					t.Errorf("read %q, want %q", b, c.want)
				}
				if err := roots.Check(c.path); err != nil {
					t.Errorf("Check(%s): %v", c.path, err)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) opened it", c.path)
			}
			if c.notRegular {
				if !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("Open(%s): %v, want not a regular file", c.path, err)
				}
				return
			}
			if !errors.Is(err, localfile.ErrNotAllowed) || !strings.Contains(err.Error(), "--file-url-allowed-paths") {
				t.Errorf("Open(%s): %v, want a refusal naming the option", c.path, err)
			}
			if roots.Check(c.path) == nil {
				t.Errorf("Check(%s) allowed it", c.path)
			}
		})
	}
	// No roots: nothing at all.
	none, err := localfile.NewRoots(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := none.Open(filepath.Join(root, "vmlinuz")); err == nil {
		f.Close()
		t.Error("empty roots opened a file")
	}
	if _, err := localfile.NewRoots([]string{filepath.Join(root, "vmlinuz")}); err == nil {
		t.Error("a file accepted as a root")
	}
}

// TestOpenResolvesAtOpenTime: a path that passed Check (a validation
// before the work) and whose directory was then swapped for a link out of
// the root is refused by Open, which resolves and checks again (a swap in
// the instant between Open's own check and open is caught by the check of
// the descriptor's name, which this test cannot time).
func TestOpenResolvesAtOpenTime(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "images")
	os.MkdirAll(filepath.Join(root, "d"), 0o700)
	os.WriteFile(filepath.Join(base, "secret"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(root, "d", "k"), []byte("kernel"), 0o600)
	roots, err := localfile.NewRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if err := roots.Check(filepath.Join(root, "d", "k")); err != nil {
		t.Fatal(err)
	}
	// After the check, the directory becomes a link to the outside.
	os.RemoveAll(filepath.Join(root, "d"))
	os.MkdirAll(filepath.Join(base, "out"), 0o700)
	os.WriteFile(filepath.Join(base, "out", "k"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(base, "out"), filepath.Join(root, "d"))
	if f, err := roots.Open(filepath.Join(root, "d", "k")); err == nil {
		b, _ := io.ReadAll(f)
		f.Close()
		t.Fatalf("opened %q through a swapped link", b)
	}
}

// TestGuard: a root holding a private file (the database), existing or
// not yet created, is refused; one beside it is not.
func TestGuard(t *testing.T) {
	base := t.TempDir()
	images := filepath.Join(base, "images")
	os.MkdirAll(images, 0o700)
	os.WriteFile(filepath.Join(base, "anvil.db"), []byte("db"), 0o600)
	cases := []struct {
		name  string
		roots []string
		files []string
		ok    bool
	}{
		{"database beside the images", []string{images}, []string{filepath.Join(base, "anvil.db")}, true},
		{"database inside a root", []string{base}, []string{filepath.Join(base, "anvil.db")}, false},
		{"database not created yet inside a root", []string{base}, []string{filepath.Join(base, "new.db")}, false},
		{"relative database path", []string{base}, []string{filepath.Join(base, "x", "..", "anvil.db")}, false},
		{"no private files", []string{base}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := localfile.NewRoots(c.roots)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Guard(c.files...)
			if (err == nil) != c.ok {
				t.Errorf("Guard(%v) = %v, want ok %v", c.files, err, c.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "--file-url-allowed-paths") {
				t.Errorf("refusal %v does not name the option", err)
			}
		})
	}
}
