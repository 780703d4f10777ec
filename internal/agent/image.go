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

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/ipa"
)

var errNotImplemented = errors.New("not implemented by this agent")

// writeImage is the image command (IPA's standby.prepare_image): it picks
// the install disk (root device hints, checked before anything is
// written), then writes a whole-disk image to it, or partitions it as IPA
// does and writes a partition image into the root partition, converting
// qcow2 with qemu-img; the image's checksum is verified and the disk
// fsynced before success; a config drive is written to its partition last.
func (a *Agent) writeImage(ctx context.Context, p map[string]any, progress *atomic.Int64) (map[string]any, error) {
	req, err := ParseImageRequest(p)
	if err != nil {
		return nil, err
	}
	target, err := a.installDevice(req.RootDevice)
	if err != nil {
		return nil, fmt.Errorf("write_image: %w", err)
	}
	sum, err := ipa.ParseChecksum(req.Algo, req.Checksum, a.allowMD5())
	if err != nil {
		return nil, fmt.Errorf("write_image: %w", err)
	}
	var cd []byte
	if req.ConfigDrive != "" {
		if cd, err = disk.FetchConfigDrive(ctx, a.cfg.Client, req.ConfigDrive); err != nil {
			return nil, fmt.Errorf("write_image: %w", err)
		}
	}
	w := imageWrite{a: a, req: req, sum: sum, h: sum.NewHash(), progress: progress, disk: target, configDrive: cd}
	return w.run(ctx)
}

// imageWrite is one run of the image command.
type imageWrite struct {
	a           *Agent
	req         ImageRequest
	sum         ipa.Checksum // what the image must hash to
	h           hash.Hash
	progress    *atomic.Int64
	disk        string
	configDrive []byte
}

func (w *imageWrite) run(ctx context.Context) (map[string]any, error) {
	res := map[string]any{"root_device": w.disk}
	// The image is opened, and a qcow2 one downloaded and verified, before
	// the disk is touched.
	img, err := w.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("write_image: %w", err)
	}
	defer img.Close()
	t := disk.Target{Path: w.disk}
	var parts []disk.Partition
	if w.req.ImageType == ipa.ImagePartition {
		if parts, err = w.partition(); err != nil {
			return nil, fmt.Errorf("write_image: %w", err)
		}
		root := find(parts, disk.RoleRoot)
		t = disk.Target{Path: w.disk, Offset: root.Start, Limit: root.Size}
	}
	n, err := w.write(ctx, img, t)
	if err != nil {
		return nil, fmt.Errorf("write_image: %w", err)
	}
	res["bytes_written"], res["checksum"] = n, hex.EncodeToString(w.h.Sum(nil))
	if w.req.ImageType == ipa.ImageWholeDisk && w.configDrive != nil {
		p, err := disk.AddConfigDrivePartition(w.disk)
		if err != nil {
			return nil, fmt.Errorf("write_image: %w", err)
		}
		parts = append(parts, p)
	}
	if p := find(parts, disk.RoleConfigDrive); p.Number > 0 {
		if err := writeAt(w.disk, w.configDrive, p.Start); err != nil {
			return nil, fmt.Errorf("write_image: config drive: %w", err)
		}
	}
	if p := find(parts, disk.RoleSwap); p.Number > 0 {
		if err := disk.FormatSwap(w.disk, p, "swap1"); err != nil {
			return nil, fmt.Errorf("write_image: swap: %w", err)
		}
	}
	if p := find(parts, disk.RoleEphemeral); p.Number > 0 {
		fs := w.req.EphemeralFormat
		if fs == "" {
			fs = "ext4" // Ironic's [pxe]default_ephemeral_format
		}
		if err := disk.FormatEphemeral(ctx, w.disk, p, fs); err != nil {
			return nil, fmt.Errorf("write_image: ephemeral: %w", err)
		}
	}
	uuids := map[string]any{}
	if w.req.ImageType == ipa.ImagePartition {
		if uuids, err = w.partitionUUIDs(parts); err != nil {
			return nil, fmt.Errorf("write_image: %w", err)
		}
	}
	w.a.mu.Lock()
	w.a.partitionUUIDs = uuids
	w.a.mu.Unlock()
	if len(parts) > 0 {
		out := map[string]any{}
		for _, p := range parts {
			out[p.Role] = map[string]any{"number": p.Number, "start": p.Start, "size": p.Size, "part_uuid": p.UUID}
		}
		res["partitions"] = out
	}
	return res, nil
}

// partitionUUIDs formats the EFI system partition a partition image's
// local boot in UEFI mode gets (FAT32, label efi-part, as ironic-lib's
// work_on_disk) and answers standby.get_partition_uuids as IPA does: the
// root file system's UUID (blkid's UUID; the partition's PARTUUID when
// blkid would find none), the EFI system partition's, and every
// partition's PARTUUID by role.
func (w *imageWrite) partitionUUIDs(parts []disk.Partition) (map[string]any, error) {
	out := map[string]any{}
	byRole := map[string]any{}
	for _, p := range parts {
		byRole[p.Role] = nilIfBlank(p.UUID)
	}
	out["partitions"] = byRole
	f, err := os.Open(w.disk)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	root := find(parts, disk.RoleRoot)
	if _, id, err := disk.FSProbe(f, root.Start); err == nil {
		out["root uuid"] = id
	} else {
		w.a.log.Warn("write_image: the partition image's root holds no file system the agent recognises; its PARTUUID stands for it", "err", err)
		out["root uuid"] = nilIfBlank(root.UUID)
	}
	if esp := find(parts, disk.RoleEFI); esp.Number > 0 {
		id, err := disk.FormatESP(w.disk, esp)
		if err != nil {
			return nil, err
		}
		out["efi system partition uuid"] = id
	}
	return out, nil
}

func nilIfBlank(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// partition plans the partition image's layout on the disk (IPA's
// make_partitions) and writes the table.
func (w *imageWrite) partition() ([]disk.Partition, error) {
	f, err := os.Open(w.disk)
	if err != nil {
		return nil, fmt.Errorf("open disk %s: %w", w.disk, err)
	}
	size, err := disk.Size(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	l := disk.Layout{Label: w.req.DiskLabel, BootMode: w.req.BootMode, LocalBoot: w.req.BootOption != "netboot",
		RootMB: w.req.RootMB, SwapMB: w.req.SwapMB, EphemeralMB: w.req.EphemeralMB,
		ConfigDriveMB: (int64(len(w.configDrive)) + 1<<20 - 1) >> 20}
	parts, err := l.Plan(size)
	if err != nil {
		return nil, err
	}
	return parts, disk.WriteTable(w.disk, l.TableType(), parts)
}

func find(parts []disk.Partition, role string) disk.Partition {
	for _, p := range parts {
		if p.Role == role {
			return p
		}
	}
	return disk.Partition{}
}

// image is the opened image: a raw stream, or a downloaded and verified
// qcow2 file. A compressed image's stream is the decompressed one, its
// checksum and size the download's (wire).
type image struct {
	raw   io.Reader
	size  int64 // -1 when unknown
	qcow2 string
	close func()
	wire  *wire // nil when the image is not compressed
}

// wire hashes and counts a compressed download as the decompressor reads
// it.
type wire struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	size int64 // -1 when unknown
}

func (c *wire) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}

// finish reads what the decompressor left (trailing bytes are hashed, so
// a stream with more than the image fails its checksum) up to the
// announced size, bounded.
func (c *wire) finish() error {
	limit := int64(64 << 20)
	if c.size >= 0 {
		limit = max(0, c.size-c.n) + 1
	}
	_, err := io.Copy(io.Discard, io.LimitReader(c, limit))
	return err
}

// decompress wraps r in the decompressor of kind.
func decompress(kind string, r io.Reader) (io.ReadCloser, error) {
	switch kind {
	case "zstd":
		// A window of up to 128 MiB: what zstd --long (27) writes; a frame
		// asking more is refused rather than sized by the image.
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<27))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case "gzip":
		return gzip.NewReader(r)
	}
	return io.NopCloser(r), nil
}

// nopHash stands in for the written stream's hash when the checksum is
// the compressed download's.
type nopHash struct{ hash.Hash }

func (nopHash) Write(p []byte) (int, error) { return len(p), nil }

func (i *image) Close() { i.close() }

// open opens the image and looks at its first bytes: a qcow2 image
// (image_disk_format qcow2, or by its magic unless raw was declared) is
// downloaded to a temporary file and verified, and needs qemu-img.
func (w *imageWrite) open(ctx context.Context) (*image, error) {
	body, size, err := openImage(ctx, w.a.cfg.Client, w.req.Source, w.req.Authorization)
	if err != nil {
		return nil, err
	}
	var wr *wire
	if w.req.Compression != "" {
		wr = &wire{r: body, h: w.h, size: size}
		dec, err := decompress(w.req.Compression, wr)
		if err != nil {
			body.Close()
			return nil, fmt.Errorf("image %s: %s: %w", w.req.Source, w.req.Compression, err)
		}
		raw := body
		body = readCloser{dec, func() error { dec.Close(); return raw.Close() }}
		size = -1
		w.h = nopHash{w.h}
	}
	head := make([]byte, len(disk.Qcow2Magic))
	k, _ := io.ReadFull(body, head)
	head = head[:k]
	isQcow2 := bytes.Equal(head, disk.Qcow2Magic)
	switch {
	case w.req.DiskFormat == "qcow2" && !isQcow2:
		body.Close()
		return nil, errors.New("image_disk_format is qcow2 but the image is not a qcow2 image")
	case w.req.DiskFormat == "raw":
		isQcow2 = false
	}
	stream := io.MultiReader(bytes.NewReader(head), body)
	if !isQcow2 {
		return &image{raw: stream, size: size, close: func() { body.Close() }, wire: wr}, nil
	}
	defer body.Close()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		return nil, disk.ErrNoQemuImg
	}
	tmp, err := os.CreateTemp("", "anvil-image-*.qcow2")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	n, err := disk.Copy(ctx, disk.Target{Path: tmp.Name(), Grow: true}, stream, w.h, nil)
	if err == nil {
		err = w.verify(n, size, wr)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return &image{qcow2: tmp.Name(), size: n, close: func() { os.Remove(tmp.Name()) }}, nil
}

// write puts the image into t: a raw stream through the pipeline, then
// verified (length and checksum); a qcow2 file converted with qemu-img.
func (w *imageWrite) write(ctx context.Context, img *image, t disk.Target) (int64, error) {
	if img.qcow2 != "" {
		if _, err := disk.ConvertQcow2(ctx, img.qcow2, t); err != nil {
			return 0, err
		}
		w.progress.Store(img.size)
		return img.size, nil
	}
	if img.size > 0 {
		t.SizeHint = img.size
	}
	n, err := disk.Copy(ctx, t, img.raw, w.h, w.progress)
	if err != nil {
		return n, err
	}
	return n, w.verify(n, img.size, img.wire)
}

// verify checks the image was whole (size bytes, when known) and matches
// its checksum; of a compressed image, the download (wr) is.
func (w *imageWrite) verify(n, size int64, wr *wire) error {
	h := w.h
	if wr != nil {
		if err := wr.finish(); err != nil {
			return fmt.Errorf("image download: %w", err)
		}
		n, size, h = wr.n, wr.size, wr.h
	}
	if size >= 0 && n != size {
		return fmt.Errorf("image truncated: got %d of %d bytes", n, size)
	}
	if got := h.Sum(nil); !w.sum.Matches(got) {
		return fmt.Errorf("image checksum mismatch: expected %s %s, got %x", w.sum.Algo, w.sum.Value, got)
	}
	return nil
}

// writeAt writes b at off of the disk at path and fsyncs it.
func writeAt(path string, b []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Sync()
}

// openImage opens an http(s) URL, a file:// URL or a local path; size is -1
// when unknown.
func openImage(ctx context.Context, client *http.Client, src, authorization string) (io.ReadCloser, int64, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s: %w", src, err)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
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

// readCloser is a reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// eraseMetadata wipes partition tables and filesystem signatures: the first
// and last MiB of the disk (GPT keeps a backup header at the end).
func (a *Agent) eraseMetadata(ctx context.Context, _ map[string]any, progress *atomic.Int64) (map[string]any, error) {
	f, err := os.OpenFile(a.cfg.Disk, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("erase_devices_metadata: open disk %s: %w", a.cfg.Disk, err)
	}
	defer f.Close()
	size, err := disk.Size(f)
	if err != nil {
		return nil, err
	}
	const span = 1 << 20
	n := min(span, size)
	// A disk file (the emulator's machines, tests) gets holes punched
	// rather than zeros written: it reads the same and stays sparse.
	st, _ := f.Stat()
	punch := st != nil && st.Mode().IsRegular()
	var zero []byte
	for _, off := range []int64{0, max(0, size-span)} {
		if punch && punchHole(f, off, n) == nil {
			progress.Add(n)
			continue
		}
		if zero == nil {
			zero = make([]byte, n)
		}
		if _, err := f.WriteAt(zero, off); err != nil {
			return nil, fmt.Errorf("erase_devices_metadata: %w", err)
		}
		progress.Add(n)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return map[string]any{"erased_bytes": 2 * n}, nil
}

// eraseDevices overwrites the whole disk with zeros.
func (a *Agent) eraseDevices(ctx context.Context, _ map[string]any, progress *atomic.Int64) (map[string]any, error) {
	f, err := os.OpenFile(a.cfg.Disk, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("erase_devices: open disk %s: %w", a.cfg.Disk, err)
	}
	defer f.Close()
	size, err := disk.Size(f)
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
