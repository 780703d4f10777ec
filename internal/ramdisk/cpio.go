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

// ReadNewc reads an uncompressed newc archive (WriteNewc's format, or any
// the kernel unpacks) up to its TRAILER!!! entry.
func ReadNewc(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	off := 0
	read := func(n int) ([]byte, error) {
		b := make([]byte, n)
		_, err := io.ReadFull(br, b)
		off += n
		return b, err
	}
	align := func() error {
		if pad := (4 - off%4) % 4; pad > 0 {
			_, err := read(pad)
			return err
		}
		return nil
	}
	var out []Entry
	for {
		h, err := read(110)
		if err != nil {
			return nil, fmt.Errorf("cpio header at %d: %w", off-110, err)
		}
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("cpio header at %d: bad magic %q", off-110, h[:6])
		}
		var f [13]uint32
		for i := range f {
			if _, err := fmt.Sscanf(string(h[6+8*i:14+8*i]), "%08X", &f[i]); err != nil {
				return nil, fmt.Errorf("cpio header at %d, field %d: %w", off-110, i, err)
			}
		}
		mode, size, rmaj, rmin, namesize := f[1], f[6], f[9], f[10], f[11]
		if namesize == 0 || namesize > 4096 {
			return nil, fmt.Errorf("cpio header at %d: name size %d", off-110, namesize)
		}
		name, err := read(int(namesize))
		if err != nil {
			return nil, err
		}
		if err := align(); err != nil {
			return nil, err
		}
		data, err := read(int(size))
		if err != nil {
			return nil, err
		}
		if err := align(); err != nil {
			return nil, err
		}
		e := Entry{Name: string(name[:namesize-1]), Mode: mode, DevMajor: rmaj, DevMinor: rmin}
		if e.Name == "TRAILER!!!" {
			return out, nil
		}
		if mode&typeMask == TypeSymlink {
			e.Link = string(data)
		} else {
			e.Data = data
		}
		out = append(out, e)
	}
}
