package disk

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Pipeline sizes: bufCount buffers of bufSize bytes, aligned to align (what
// O_DIRECT needs on every Linux block device).
const (
	bufSize  = 8 << 20
	bufCount = 4
	align    = 4096
)

// ErrTooSmall is wrapped when an image does not fit its target.
var ErrTooSmall = errors.New("disk too small")

// Target is where an image goes: Path (a block device or a regular file)
// from Offset, at most Limit bytes (0: to the end of the device). Grow
// lets a regular file grow without limit (a download to a temporary file).
type Target struct {
	Path   string
	Offset int64
	Limit  int64
	Grow   bool
	// SizeHint is the image's size when known (0: unknown): Copy's
	// buffers are then no larger than the image needs, so that many small
	// images written at once (an emulated fleet) do not each hold
	// bufCount × bufSize.
	SizeHint int64
}

// Size is a block device's or a file's size.
func Size(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Mode().IsRegular() {
		return st.Size(), nil
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	_, err = f.Seek(0, io.SeekStart)
	return end, err
}

// alignedBuf returns n bytes whose address is a multiple of align.
func alignedBuf(n int) []byte {
	b := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (align - 1))
	if off != 0 {
		off = align - off
	}
	return b[off : off+n : off+n]
}

// chunk is one buffer in flight: the hasher and the writer each release it
// once; the second release returns it to the pool.
type chunk struct {
	buf  []byte
	n    int
	off  int64
	refs atomic.Int32
}

// Copy streams src into t while hashing it, as a pipeline: one goroutine
// reads, one hashes and one writes, on bufCount large aligned buffers, so
// the slowest of the three sets the pace. On a block device whole blocks
// are written with O_DIRECT. The target is fsynced before Copy returns; n
// counts bytes written, progress is advanced as they are. An image longer
// than the target fails with ErrTooSmall.
func Copy(ctx context.Context, t Target, src io.Reader, h hash.Hash, progress *atomic.Int64) (n int64, err error) {
	f, err := os.OpenFile(t.Path, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("open disk %s: %w", t.Path, err)
	}
	defer f.Close()
	capacity, err := Size(f)
	if err != nil {
		return 0, fmt.Errorf("size of disk %s: %w", t.Path, err)
	}
	limit := capacity - t.Offset
	if t.Limit > 0 && t.Limit < limit {
		limit = t.Limit
	}
	if t.Grow {
		limit = 1<<63 - 1
	}
	w := &writer{f: f}
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeDevice != 0 && t.Offset%align == 0 {
		if d, err := openDirect(t.Path); err == nil {
			w.direct = d
			defer d.Close()
		}
	}
	size := bufSize
	if t.SizeHint > 0 && t.SizeHint < bufSize {
		size = int(t.SizeHint+align) &^ (align - 1) // one buffer holds the image and finds EOF
	}
	n, err = pipeline(ctx, src, h, w, t.Offset, limit, size, progress)
	if err != nil {
		return n, err
	}
	if err := w.sync(); err != nil {
		return n, fmt.Errorf("fsync %s: %w", t.Path, err)
	}
	return n, nil
}

// writer writes at an offset, through the O_DIRECT descriptor when it has
// one and the range is whole blocks.
type writer struct {
	f, direct *os.File
}

func (w *writer) writeAt(b []byte, off int64) error {
	if w.direct != nil && off%align == 0 {
		whole := len(b) &^ (align - 1)
		if whole > 0 {
			if _, err := w.direct.WriteAt(b[:whole], off); err != nil {
				return err
			}
		}
		b, off = b[whole:], off+int64(whole)
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(b, off); err != nil {
		return err
	}
	startWriteback(w.f, off, int64(len(b)))
	return nil
}

func (w *writer) sync() error {
	if w.direct != nil {
		if err := w.direct.Sync(); err != nil {
			return err
		}
	}
	return w.f.Sync()
}

// pipeline reads src into pooled buffers and hands each to the hasher and
// the writer, which run beside each other and beside the next read.
func pipeline(ctx context.Context, src io.Reader, h hash.Hash, w *writer, base, limit int64, size int, progress *atomic.Int64) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	free := &buffers{free: make(chan []byte, bufCount), size: size}
	release := func(c *chunk) {
		if c.refs.Add(-1) == 0 {
			free.put(c.buf)
		}
	}
	toHash := make(chan *chunk, bufCount)
	toWrite := make(chan *chunk, bufCount)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for c := range toHash {
			h.Write(c.buf[:c.n])
			release(c)
		}
	}()
	go func() {
		defer wg.Done()
		for c := range toWrite {
			if ctx.Err() == nil {
				if err := w.writeAt(c.buf[:c.n], base+c.off); err != nil {
					cancel(fmt.Errorf("writing the disk: %w", err))
				} else if progress != nil {
					progress.Add(int64(c.n))
				}
			}
			release(c)
		}
	}()
	total, rerr := readLoop(ctx, src, free, limit, func(c *chunk) {
		toHash <- c
		toWrite <- c
	})
	close(toHash)
	close(toWrite)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && rerr == nil {
		rerr = err
	}
	return total, rerr
}

// buffers hands the pipeline's reader up to bufCount aligned buffers of
// size bytes, each allocated when first needed: an image that fits one
// buffer never costs more.
type buffers struct {
	free chan []byte
	size int
	made int // only the reader calls get
}

func (p *buffers) get(ctx context.Context) ([]byte, error) {
	select {
	case b := <-p.free:
		return b, nil
	default:
	}
	if p.made < cap(p.free) {
		p.made++
		return alignedBuf(p.size), nil
	}
	select {
	case b := <-p.free:
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (p *buffers) put(b []byte) { p.free <- b }

// readLoop fills free buffers from src and sends each as a chunk; it stops
// at EOF, on an error, or when ctx ends (the writer failed).
func readLoop(ctx context.Context, src io.Reader, free *buffers, limit int64, send func(*chunk)) (int64, error) {
	var total int64
	for {
		b, err := free.get(ctx)
		if err != nil {
			return total, err
		}
		n, err := io.ReadFull(src, b)
		if n > 0 {
			if total+int64(n) > limit {
				free.put(b)
				return total, fmt.Errorf("%w: the image exceeds the %d bytes available", ErrTooSmall, limit)
			}
			c := &chunk{buf: b, n: n, off: total}
			c.refs.Store(2)
			total += int64(n)
			send(c)
		} else {
			free.put(b)
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return total, nil
		case err != nil:
			return total, fmt.Errorf("reading the image: %w", err)
		}
	}
}
