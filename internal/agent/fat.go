package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// fatFS reads a FAT12, FAT16 or FAT32 file system (an EFI system
// partition) in place on a disk, without mounting it: the agent finds the
// boot loader files of a whole-disk image this way, in a ramdisk or a test
// alike. Read-only; directories are listed in on-disk order (as Linux's
// vfat readdir lists them).
type fatFS struct {
	r           io.ReaderAt
	base        int64 // the partition's start on the disk, bytes
	bps         int64 // bytes per sector
	spc         int64 // sectors per cluster
	fatStart    int64 // bytes from base
	rootStart   int64 // FAT12/16: the fixed root directory, bytes from base
	rootSize    int64
	rootCluster uint32 // FAT32
	dataStart   int64  // bytes from base
	clusters    uint32 // data clusters (numbered 2..clusters+1)
	bits        int    // 12, 16 or 32
}

// fatEntry is one file or directory.
type fatEntry struct {
	Name    string
	Dir     bool
	Cluster uint32
	Size    uint32
}

// openFAT reads the boot sector of the file system at base (size bytes).
func openFAT(r io.ReaderAt, base, size int64) (*fatFS, error) {
	bs := make([]byte, 512)
	if _, err := r.ReadAt(bs, base); err != nil {
		return nil, fmt.Errorf("FAT boot sector: %w", err)
	}
	le16 := func(o int) int64 { return int64(binary.LittleEndian.Uint16(bs[o:])) }
	le32 := func(o int) int64 { return int64(binary.LittleEndian.Uint32(bs[o:])) }
	f := &fatFS{r: r, base: base, bps: le16(11), spc: int64(bs[13])}
	if bs[510] != 0x55 || bs[511] != 0xaa || !validFATSectorSize(f.bps) || f.spc == 0 || f.spc&(f.spc-1) != 0 {
		return nil, errors.New("not a FAT file system")
	}
	rsvd, nfats, rootEnts := le16(14), int64(bs[16]), le16(17)
	fatSz, tot := le16(22), le16(19)
	if fatSz == 0 {
		fatSz = le32(36)
	}
	if tot == 0 {
		tot = le32(32)
	}
	if rsvd == 0 || nfats == 0 || fatSz == 0 || tot*f.bps > size {
		return nil, errors.New("not a FAT file system (bad geometry)")
	}
	rootSecs := (rootEnts*32 + f.bps - 1) / f.bps
	first := rsvd + nfats*fatSz + rootSecs
	if first >= tot {
		return nil, errors.New("not a FAT file system (no data area)")
	}
	f.fatStart = rsvd * f.bps
	f.rootStart, f.rootSize = (rsvd+nfats*fatSz)*f.bps, rootSecs*f.bps
	f.dataStart = first * f.bps
	f.clusters = uint32((tot - first) / f.spc)
	switch {
	case f.clusters < 4085:
		f.bits = 12
	case f.clusters < 65525:
		f.bits = 16
	default:
		f.bits = 32
		f.rootCluster = uint32(le32(44))
	}
	return f, nil
}

func validFATSectorSize(n int64) bool { return n == 512 || n == 1024 || n == 2048 || n == 4096 }

// next is the FAT's entry for cluster c; ok is false at the chain's end
// (or a free, bad or out-of-range entry).
func (f *fatFS) next(c uint32) (uint32, bool, error) {
	var b [4]byte
	var v uint32
	switch f.bits {
	case 12:
		off := int64(c) + int64(c)/2
		if _, err := f.r.ReadAt(b[:2], f.base+f.fatStart+off); err != nil {
			return 0, false, err
		}
		v = uint32(binary.LittleEndian.Uint16(b[:]))
		if c&1 == 1 {
			v >>= 4
		}
		v &= 0xfff
		if v >= 0xff7 {
			return 0, false, nil
		}
	case 16:
		if _, err := f.r.ReadAt(b[:2], f.base+f.fatStart+2*int64(c)); err != nil {
			return 0, false, err
		}
		v = uint32(binary.LittleEndian.Uint16(b[:]))
		if v >= 0xfff7 {
			return 0, false, nil
		}
	default:
		if _, err := f.r.ReadAt(b[:], f.base+f.fatStart+4*int64(c)); err != nil {
			return 0, false, err
		}
		v = binary.LittleEndian.Uint32(b[:]) & 0x0fffffff
		if v >= 0x0ffffff7 {
			return 0, false, nil
		}
	}
	return v, v >= 2 && v < f.clusters+2, nil
}

// chain reads the clusters of a chain starting at c, at most limit bytes
// (limit < 0: the whole chain).
func (f *fatFS) chain(c uint32, limit int64) ([]byte, error) {
	csize := f.bps * f.spc
	var out []byte
	for n := uint32(0); c >= 2 && c < f.clusters+2; n++ {
		if n > f.clusters {
			return nil, errors.New("FAT cluster chain loops")
		}
		if limit >= 0 && int64(len(out)) >= limit {
			break
		}
		buf := make([]byte, csize)
		if _, err := f.r.ReadAt(buf, f.base+f.dataStart+int64(c-2)*csize); err != nil {
			return nil, err
		}
		out = append(out, buf...)
		nx, ok, err := f.next(c)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		c = nx
	}
	if limit >= 0 && int64(len(out)) > limit {
		out = out[:limit]
	}
	return out, nil
}

// readFile is a file's content.
func (f *fatFS) readFile(e fatEntry) ([]byte, error) {
	if e.Size == 0 {
		return nil, nil
	}
	b, err := f.chain(e.Cluster, int64(e.Size))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) < int64(e.Size) {
		return nil, fmt.Errorf("FAT file %s truncated", e.Name)
	}
	return b, nil
}

// list reads a directory (the root when dir is nil).
func (f *fatFS) list(dir *fatEntry) ([]fatEntry, error) {
	var raw []byte
	var err error
	switch {
	case dir != nil:
		raw, err = f.chain(dir.Cluster, -1)
	case f.bits == 32:
		raw, err = f.chain(f.rootCluster, -1)
	default:
		raw = make([]byte, f.rootSize)
		_, err = f.r.ReadAt(raw, f.base+f.rootStart)
	}
	if err != nil {
		return nil, err
	}
	var out []fatEntry
	var lfn []uint16 // the long name being assembled, in order
	var lfnSum byte
	for i := 0; i+32 <= len(raw); i += 32 {
		d := raw[i : i+32]
		if d[0] == 0 {
			break
		}
		if d[0] == 0xe5 {
			lfn = nil
			continue
		}
		attr := d[11]
		if attr&0x3f == 0x0f { // a long name part; they come last part first
			seq := d[0] & 0x3f
			if d[0]&0x40 != 0 {
				lfn, lfnSum = make([]uint16, 13*int(seq)), d[13]
			}
			if lfn == nil || seq == 0 || int(seq)*13 > len(lfn) || d[13] != lfnSum {
				lfn = nil
				continue
			}
			p := lfn[(int(seq)-1)*13:]
			for j, o := range []int{1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30} {
				p[j] = binary.LittleEndian.Uint16(d[o:])
			}
			continue
		}
		long := lfn
		lfn = nil
		if attr&0x08 != 0 { // volume label
			continue
		}
		name := shortName(d)
		if name == "." || name == ".." {
			continue
		}
		if long != nil && shortSum(d) == lfnSum {
			if end := indexU16(long, 0); end >= 0 {
				long = long[:end]
			}
			name = string(utf16.Decode(long))
		}
		cl := uint32(binary.LittleEndian.Uint16(d[26:]))
		if f.bits == 32 {
			cl |= uint32(binary.LittleEndian.Uint16(d[20:])) << 16
		}
		out = append(out, fatEntry{Name: name, Dir: attr&0x10 != 0, Cluster: cl, Size: binary.LittleEndian.Uint32(d[28:])})
	}
	return out, nil
}

func indexU16(s []uint16, v uint16) int {
	for i, c := range s {
		if c == v {
			return i
		}
	}
	return -1
}

// shortName is an 8.3 entry's name, lower-cased where Windows NT's case
// bits (byte 12) say so.
func shortName(d []byte) string {
	base := strings.TrimRight(string(d[0:8]), " ")
	if d[0] == 0x05 {
		base = "\xe5" + base[1:]
	}
	ext := strings.TrimRight(string(d[8:11]), " ")
	if d[12]&0x08 != 0 {
		base = strings.ToLower(base)
	}
	if d[12]&0x10 != 0 {
		ext = strings.ToLower(ext)
	}
	if ext == "" {
		return base
	}
	return base + "." + ext
}

// shortSum is the checksum of an 8.3 name that its long name parts carry.
func shortSum(d []byte) byte {
	var s byte
	for _, c := range d[:11] {
		s = (s>>1 | s<<7) + c
	}
	return s
}

// fatWalk visits the file system top-down as Python's os.walk does: each
// directory's files (in on-disk order) before its subdirectories. visit
// returns false to stop. Depth and entries are bounded.
func (f *fatFS) walk(visit func(dir string, files []fatEntry) (bool, error)) error {
	type item struct {
		path string
		e    *fatEntry
	}
	const maxDirs = 4096
	var rec func(it item, depth int, seen *int) (bool, error)
	rec = func(it item, depth int, seen *int) (bool, error) {
		if *seen++; *seen > maxDirs || depth > 32 {
			return false, errors.New("FAT directory tree too deep or too large")
		}
		ents, err := f.list(it.e)
		if err != nil {
			return false, err
		}
		var files, dirs []fatEntry
		for _, e := range ents {
			if e.Dir {
				dirs = append(dirs, e)
			} else {
				files = append(files, e)
			}
		}
		if cont, err := visit(it.path, files); !cont || err != nil {
			return false, err
		}
		for i := range dirs {
			p := dirs[i].Name
			if it.path != "" {
				p = it.path + "/" + p
			}
			if cont, err := rec(item{path: p, e: &dirs[i]}, depth+1, seen); !cont || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	seen := 0
	_, err := rec(item{}, 0, &seen)
	return err
}
