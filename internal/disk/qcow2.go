package disk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Qcow2Magic starts every qcow2 image.
var Qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// ErrNoQemuImg is returned when a qcow2 image needs converting and
// qemu-img is not installed (no maintained pure-Go qcow2 reader exists).
var ErrNoQemuImg = errors.New("the image is qcow2 and converting it needs qemu-img, which is not installed on this machine (Debian: qemu-utils)")

// ConvertQcow2 writes the raw content of the qcow2 file src into t with
// qemu-img convert (the target opened as a raw window at t.Offset), then
// fsyncs the target. It returns the image's virtual size; an image larger
// than the target fails with ErrTooSmall before anything is written.
func ConvertQcow2(ctx context.Context, src string, t Target) (int64, error) {
	qemu, err := exec.LookPath("qemu-img")
	if err != nil {
		return 0, ErrNoQemuImg
	}
	out, err := exec.CommandContext(ctx, qemu, "info", "--output=json", "-f", "qcow2", src).Output()
	if err != nil {
		return 0, fmt.Errorf("qemu-img info: %w: %s", err, stderr(err))
	}
	var info struct {
		VirtualSize int64 `json:"virtual-size"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return 0, fmt.Errorf("qemu-img info: %w", err)
	}
	f, err := os.OpenFile(t.Path, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("open disk %s: %w", t.Path, err)
	}
	defer f.Close()
	capacity, err := Size(f)
	if err != nil {
		return 0, err
	}
	limit := capacity - t.Offset
	if t.Limit > 0 && t.Limit < limit {
		limit = t.Limit
	}
	if info.VirtualSize > limit {
		return 0, fmt.Errorf("%w: the image's virtual size is %d bytes, %d bytes are available", ErrTooSmall, info.VirtualSize, limit)
	}
	abs, err := filepath.Abs(t.Path)
	if err != nil {
		return 0, err
	}
	if strings.ContainsAny(abs, ",") {
		return 0, fmt.Errorf("disk path %q contains a comma, which qemu-img options cannot carry", abs)
	}
	target := fmt.Sprintf("driver=raw,offset=%d,size=%d,file.driver=file,file.filename=%s", t.Offset, limit, abs)
	cmd := exec.CommandContext(ctx, qemu, "convert", "-n", "-f", "qcow2", "--target-image-opts", src, target)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("qemu-img convert: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", t.Path, err)
	}
	return info.VirtualSize, nil
}

func stderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(bytes.TrimSpace(ee.Stderr))
	}
	return ""
}
