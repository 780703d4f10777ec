package disk

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// EphemeralFormats are the filesystems FormatEphemeral makes (with
// e2fsprogs, which every Debian-based ramdisk has).
var EphemeralFormats = []string{"ext2", "ext3", "ext4"}

// EphemeralLabel is the label IPA's work_on_disk gives the ephemeral
// partition's filesystem.
const EphemeralLabel = "ephemeral0"

// FormatEphemeral makes a filesystem of type fs labelled EphemeralLabel on
// partition p of the disk at path (mkfs.<fs> on the whole disk at the
// partition's offset, so no partition device node is needed).
func FormatEphemeral(ctx context.Context, path string, p Partition, fs string) error {
	ok := false
	for _, f := range EphemeralFormats {
		ok = ok || f == fs
	}
	if !ok {
		return fmt.Errorf("ephemeral_format %q is not supported (%s)", fs, strings.Join(EphemeralFormats, ", "))
	}
	mkfs, err := exec.LookPath("mkfs." + fs)
	if err != nil {
		return fmt.Errorf("making the %s ephemeral filesystem needs mkfs.%s (e2fsprogs), which is not installed", fs, fs)
	}
	out, err := exec.CommandContext(ctx, mkfs, "-F", "-q", "-L", EphemeralLabel, "-E", "offset="+strconv.FormatInt(p.Start, 10),
		path, strconv.FormatInt(p.Size>>10, 10)+"k").CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.%s: %w: %s", fs, err, strings.TrimSpace(string(out)))
	}
	return nil
}
