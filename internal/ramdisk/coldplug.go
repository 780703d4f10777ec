package ramdisk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Coldplug is what udev does at boot for devices that appeared before it
// ran: read every device's modalias under SysDir, find the modules whose
// modules.alias patterns match and load them, dependencies first. Loading a
// bus driver (virtio_pci, say) makes new devices (virtio0, ...), so it
// scans again until a scan finds no new modalias, waiting Settle before a
// last look for devices that probe asynchronously.
type Coldplug struct {
	SysDir string    // /sys
	Index  *DepIndex // the module directory's modules.dep, .alias, .softdep
	// Load loads the module at path (relative to the module directory);
	// a module already loaded is no error.
	Load   func(ctx context.Context, module, path string) error
	Log    func(msg string)
	Settle time.Duration // wait before the final scan (default 300ms)
	Rounds int           // most scans (default 20)
}

// ColdplugResult says what a Coldplug run did.
type ColdplugResult struct {
	Loaded []string          // modules loaded, in order
	Failed map[string]string // module -> why it did not load
	Scans  int
}

// Run scans and loads until the devices settle or ctx ends.
func (c Coldplug) Run(ctx context.Context) (ColdplugResult, error) {
	if c.Settle <= 0 {
		c.Settle = 300 * time.Millisecond
	}
	if c.Rounds <= 0 {
		c.Rounds = 20
	}
	if c.Log == nil {
		c.Log = func(string) {}
	}
	res := ColdplugResult{Failed: map[string]string{}}
	seen := map[string]bool{}  // modaliases handled
	tried := map[string]bool{} // modules loaded or failed
	quiet := false
	for res.Scans < c.Rounds {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		res.Scans++
		aliases, err := readModaliases(c.SysDir)
		if err != nil {
			return res, err
		}
		aliases = append(aliases, platformAliases(c.SysDir)...)
		fresh := 0
		for _, ma := range aliases {
			if seen[ma] {
				continue
			}
			seen[ma] = true
			fresh++
			for _, mod := range c.Index.Match(ma) {
				if tried[mod] {
					continue
				}
				var chain []string
				broken := ""
				for _, m := range c.Index.LoadOrder(mod) {
					if tried[m] {
						if _, failed := res.Failed[m]; failed && broken == "" {
							broken = m
						}
						continue
					}
					tried[m] = true
					if broken != "" { // modprobe stops at a dependency that did not load
						res.Failed[m] = "needs " + broken + ", which did not load"
						continue
					}
					if err := c.Load(ctx, m, c.Index.Path(m)); err != nil {
						res.Failed[m] = err.Error()
						broken = m
						c.Log(fmt.Sprintf("modalias %s: loading %s failed: %v", ma, m, err))
						continue
					}
					res.Loaded = append(res.Loaded, m)
					chain = append(chain, m)
				}
				if len(chain) > 0 {
					c.Log(fmt.Sprintf("modalias %s -> %s (loaded %s)", ma, mod, strings.Join(chain, " ")))
				}
				if broken != "" {
					c.Log(fmt.Sprintf("modalias %s -> %s: not loaded, %s did not load", ma, mod, broken))
				}
			}
		}
		if fresh > 0 {
			quiet = false
			continue
		}
		if quiet {
			break
		}
		quiet = true
		t := time.NewTimer(c.Settle)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-t.C:
		}
	}
	return res, nil
}

// readModaliases reads sys/bus/*/devices/*/modalias, sorted (one device's
// file unreadable or empty is skipped: devices come and go).
func readModaliases(sys string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(sys, "bus", "*", "devices", "*", "modalias"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(filepath.Join(sys, "bus")); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("coldplug: %s/bus does not exist (sysfs not mounted?)", sys)
		}
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if s := strings.TrimSpace(string(b)); err == nil && s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// platformAliases are the module aliases the platform asks for besides its
// devices': a machine booted by UEFI (SysDir/firmware/efi) gets efivarfs
// (alias fs-efivarfs), as systemd mounts it at boot, so the agent can
// write the boot entry of the deployed image.
func platformAliases(sysDir string) []string {
	if _, err := os.Stat(filepath.Join(sysDir, "firmware", "efi")); err == nil {
		return []string{"fs-efivarfs"}
	}
	return nil
}
