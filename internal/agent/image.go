package agent

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"

	"github.com/anvil-metal/anvil/internal/agent/agentapi"
	"github.com/anvil-metal/anvil/internal/ipa"
)

var errNotImplemented = errors.New("not implemented by this agent")

// qcow2Magic starts every qcow2 image.
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// writeImage streams image_source to the disk while hashing it, verifies
// the checksum and fsyncs. qcow2 images are converted with qemu-img.
func (a *Agent) writeImage(ctx context.Context, p map[string]any, progress *atomic.Int64) (map[string]any, error) {
	src, _ := p[agentapi.ParamImageSource].(string)
	sum, _ := p[agentapi.ParamChecksum].(string)
	algo, _ := p[agentapi.ParamChecksumAlgo].(string)
	if src == "" {
		return nil, errors.New("write_image: image_source is missing")
	}
	h, err := newHash(algo, sum, a.allowMD5())
	if err != nil {
		return nil, err
	}
	body, size, err := openImage(ctx, a.cfg.Client, src)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(body, head)
	head = head[:n]
	stream := io.MultiReader(bytes.NewReader(head), body)
	if bytes.Equal(head, qcow2Magic) {
		return a.writeQcow2(ctx, stream, h, sum, algo, progress)
	}
	return WriteRaw(ctx, a.cfg.Disk, stream, size, h, sum, algo, progress)
}

// newHash returns the hash verifying sum; the checksum rules are
// ipa.ParseChecksum's (the conductor already applied them).
func newHash(algo, sum string, allowMD5 bool) (hash.Hash, error) {
	c, err := ipa.ParseChecksum(algo, sum, allowMD5)
	if err != nil {
		return nil, fmt.Errorf("write_image: %w", err)
	}
	return c.NewHash(), nil
}

// openImage opens an http(s) URL, a file:// URL or a local path; size is -1
// when unknown.
func openImage(ctx context.Context, client *http.Client, src string) (io.ReadCloser, int64, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s: %w", src, err)
		}
		c := *client
		c.Timeout = 0 // the download may take long; ctx bounds it
		resp, err := c.Do(req)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s unreachable: %w", src, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, 0, fmt.Errorf("image %s unreachable: HTTP %s", src, resp.Status)
		}
		return resp.Body, resp.ContentLength, nil
	}
	path := strings.TrimPrefix(src, "file://")
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("image %s unreachable: %w", src, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// diskSize is a block device's or a file's size.
func diskSize(f *os.File) (int64, error) {
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

// WriteRaw copies src (size bytes, -1 if unknown) to the start of disk,
// hashing as it goes, then fsyncs and checks the digest against want. It
// refuses an image larger than the disk (a file disk never grows).
func WriteRaw(ctx context.Context, disk string, src io.Reader, size int64, h hash.Hash, want, algo string, progress *atomic.Int64) (map[string]any, error) {
	f, err := os.OpenFile(disk, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("write_image: open disk %s: %w", disk, err)
	}
	defer f.Close()
	capacity, err := diskSize(f)
	if err != nil {
		return nil, fmt.Errorf("write_image: size of disk %s: %w", disk, err)
	}
	if size > capacity {
		return nil, fmt.Errorf("write_image: disk too small: image is %d bytes, disk %s holds %d bytes", size, disk, capacity)
	}
	n, err := copyHashed(ctx, f, src, h, capacity, progress)
	if err != nil {
		return nil, err
	}
	if size >= 0 && n != size {
		return nil, fmt.Errorf("write_image: image truncated: got %d of %d bytes", n, size)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("write_image: fsync %s: %w", disk, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return nil, fmt.Errorf("write_image: image checksum mismatch: expected %s %s, got %s", algoName(algo, want), want, got)
	}
	return map[string]any{"bytes_written": n, "checksum": got}, nil
}

func algoName(algo, sum string) string {
	if algo != "" {
		return algo
	}
	return map[int]string{64: "sha256", 128: "sha512", 32: "md5"}[len(sum)]
}

// copyHashed streams src into dst and h with two buffers in flight: one
// being read and hashed while the other is written.
func copyHashed(ctx context.Context, dst io.Writer, src io.Reader, h hash.Hash, capacity int64, progress *atomic.Int64) (int64, error) {
	const bufSize = 4 << 20
	type chunk struct {
		b []byte
		n int
	}
	free := make(chan []byte, 2)
	full := make(chan chunk, 2)
	free <- make([]byte, bufSize)
	free <- make([]byte, bufSize)
	werr := make(chan error, 1)
	go func() {
		var err error
		for c := range full {
			if err == nil {
				_, err = dst.Write(c.b[:c.n])
				if err == nil {
					progress.Add(int64(c.n))
				}
			}
			free <- c.b
		}
		werr <- err
	}()
	var total int64
	var rerr error
	for rerr == nil {
		if err := ctx.Err(); err != nil {
			rerr = err
			break
		}
		b := <-free
		n, err := io.ReadFull(src, b)
		if n > 0 {
			if total+int64(n) > capacity {
				rerr = fmt.Errorf("write_image: disk too small: image exceeds the disk's %d bytes", capacity)
				free <- b
				break
			}
			h.Write(b[:n])
			total += int64(n)
			full <- chunk{b, n}
		} else {
			free <- b
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			close(full)
			if e := <-werr; e != nil {
				return total, fmt.Errorf("write_image: writing the disk: %w", e)
			}
			return total, nil
		case err != nil:
			rerr = fmt.Errorf("write_image: reading the image: %w", err)
		}
	}
	close(full)
	<-werr
	return total, rerr
}

// writeQcow2 saves the image to a temporary file (hashing it), verifies it
// and converts it onto the disk with qemu-img.
func (a *Agent) writeQcow2(ctx context.Context, src io.Reader, h hash.Hash, want, algo string, progress *atomic.Int64) (map[string]any, error) {
	qemu, err := exec.LookPath("qemu-img")
	if err != nil {
		return nil, errors.New("write_image: the image is qcow2 and converting it needs qemu-img, which is not installed on this machine")
	}
	tmp, err := os.CreateTemp("", "anvil-image-*.qcow2")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	var dl atomic.Int64
	if _, err := copyHashed(ctx, tmp, src, h, 1<<62, &dl); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return nil, fmt.Errorf("write_image: image checksum mismatch: expected %s %s, got %s", algoName(algo, want), want, got)
	}
	out, err := exec.CommandContext(ctx, qemu, "convert", "-f", "qcow2", "-O", "raw", "-n", tmp.Name(), a.cfg.Disk).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("write_image: qemu-img convert: %v: %s", err, strings.TrimSpace(string(out)))
	}
	f, err := os.OpenFile(a.cfg.Disk, os.O_WRONLY, 0)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("write_image: fsync %s: %w", a.cfg.Disk, err)
	}
	progress.Store(dl.Load())
	return map[string]any{"bytes_written": dl.Load(), "format": "qcow2"}, nil
}

// eraseMetadata wipes partition tables and filesystem signatures: the first
// and last MiB of the disk (GPT keeps a backup header at the end).
func (a *Agent) eraseMetadata(ctx context.Context, _ map[string]any, progress *atomic.Int64) (map[string]any, error) {
	f, err := os.OpenFile(a.cfg.Disk, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("erase_devices_metadata: open disk %s: %w", a.cfg.Disk, err)
	}
	defer f.Close()
	size, err := diskSize(f)
	if err != nil {
		return nil, err
	}
	const span = 1 << 20
	zero := make([]byte, min(span, size))
	for _, off := range []int64{0, max(0, size-span)} {
		if _, err := f.WriteAt(zero, off); err != nil {
			return nil, fmt.Errorf("erase_devices_metadata: %w", err)
		}
		progress.Add(int64(len(zero)))
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return map[string]any{"erased_bytes": 2 * len(zero)}, nil
}

// eraseDevices overwrites the whole disk with zeros.
func (a *Agent) eraseDevices(ctx context.Context, _ map[string]any, progress *atomic.Int64) (map[string]any, error) {
	f, err := os.OpenFile(a.cfg.Disk, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("erase_devices: open disk %s: %w", a.cfg.Disk, err)
	}
	defer f.Close()
	size, err := diskSize(f)
	if err != nil {
		return nil, err
	}
	zero := make([]byte, 4<<20)
	for off := int64(0); off < size; off += int64(len(zero)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(int64(len(zero)), size-off)
		if _, err := f.WriteAt(zero[:n], off); err != nil {
			return nil, fmt.Errorf("erase_devices: %w", err)
		}
		progress.Add(n)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return map[string]any{"erased_bytes": size}, nil
}
