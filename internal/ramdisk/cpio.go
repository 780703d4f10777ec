package ramdisk

import (
	"bufio"
	"fmt"
	"io"
)

// File types for Entry.Mode (with the permission bits).
const (
	TypeDir     = 0o040000
	TypeRegular = 0o100000
	TypeSymlink = 0o120000
	TypeCharDev = 0o020000
	typeMask    = 0o170000
)

// Entry is one file of a cpio archive.
type Entry struct {
	Name     string // path without a leading slash, e.g. "bin/busybox"
	Mode     uint32 // type bits | permission bits
	Data     []byte // contents of a regular file
	Link     string // target of a symlink
	DevMajor uint32 // device number of a character device
	DevMinor uint32
}

// WriteNewc writes entries as an uncompressed cpio archive in the "newc"
// format the kernel unpacks into its initial root file system, followed by
// the TRAILER!!! entry.
func WriteNewc(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	n := 0 // bytes written, for the 4-byte alignment
	write := func(b []byte) {
		m, _ := bw.Write(b) // a bufio.Writer keeps its first error for Flush
		n += m
	}
	pad := func() {
		for n%4 != 0 {
			write([]byte{0})
		}
	}
	entry := func(ino int, e Entry) {
		data := e.Data
		if e.Mode&typeMask == TypeSymlink {
			data = []byte(e.Link)
		}
		nlink := 1
		if e.Mode&typeMask == TypeDir {
			nlink = 2
		}
		// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
		// devminor, rdevmajor, rdevminor, namesize, check
		write(fmt.Appendf(nil, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, e.Mode, 0, 0, nlink, 0, len(data), 0, 0, e.DevMajor, e.DevMinor, len(e.Name)+1, 0))
		write(append([]byte(e.Name), 0))
		pad()
		write(data)
		pad()
	}
	for i, e := range entries {
		if e.Name == "" || e.Name[0] == '/' {
			return fmt.Errorf("cpio entry %q: the name must be relative and not empty", e.Name)
		}
		entry(i+1, e)
	}
	entry(0, Entry{Name: "TRAILER!!!"})
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write cpio archive: %w", err)
	}
	return nil
}
