package boot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/anvil-metal/anvil/internal/isoimage"
)

// withDefaults fills the unset loader paths with Debian's.
func withDefaults(l isoimage.Loaders) isoimage.Loaders {
	d := isoimage.DefaultLoaders()
	if l.ISOLinux == "" {
		l.ISOLinux = d.ISOLinux
	}
	if l.LDLinux == "" {
		l.LDLinux = d.LDLinux
	}
	if l.EFI == "" {
		l.EFI = d.EFI
	}
	return l
}

// CheckISOLoaders reports whether PublishISO can build images: every boot
// loader file is present (the error names the Debian package of each
// missing one).
func (s *Service) CheckISOLoaders() error { return s.loaders.Check() }

// ISOCmdline is the kernel command line of a node's virtual media image:
// the node's parameters, then ipa-api-url and boot_method=vmedia (as
// Ironic's prepare_ramdisk adds them). No BOOTIF: no network boot chose a NIC.
func (s *Service) ISOCmdline(params string) string {
	out := strings.Fields(params)
	if s.apiURL != "" {
		out = append(out, "ipa-api-url="+s.apiURL)
	}
	return strings.Join(append(out, "boot_method=vmedia"), " ")
}

// PublishISO fetches and verifies r's kernel and ramdisk, builds (or finds
// in the cache) the bootable ISO of them with ISOCmdline(r.KernelParams),
// and publishes it for node under an unguessable URL, which it returns:
// {HTTPURL}/n/{token}/boot.iso. Whatever the node had published before is
// replaced. Images are cached by the content of the kernel, the ramdisk,
// the loaders and the command line, so nodes booting the same ramdisk with
// the same parameters share one build.
func (s *Service) PublishISO(ctx context.Context, node string, r Ramdisk) (string, error) {
	if node == "" || hasControl(node) {
		return "", fmt.Errorf("boot: invalid node name %q", node)
	}
	cmdline := s.ISOCmdline(r.KernelParams)
	if err := isoimage.CheckCmdline(cmdline); err != nil {
		return "", fmt.Errorf("boot: node %s: %w", node, err)
	}
	if err := s.loaders.Check(); err != nil {
		return "", fmt.Errorf("boot: node %s: %w", node, err)
	}
	kernel, err := s.cache.fetch(ctx, r.Kernel)
	if err != nil {
		return "", fmt.Errorf("boot: node %s: kernel: %w", node, err)
	}
	ramdisk, err := s.cache.fetch(ctx, r.Ramdisk)
	if err != nil {
		return "", fmt.Errorf("boot: node %s: ramdisk: %w", node, err)
	}
	iso, err := s.buildISO(ctx, isoimage.Input{Kernel: kernel, Ramdisk: ramdisk, Cmdline: cmdline})
	if err != nil {
		return "", fmt.Errorf("boot: node %s: %w", node, err)
	}
	rec, err := s.publishRecord(&record{Node: node, ISO: true}, func(rec *record, dir string) error {
		if err := removeFiles(dir, kernelFile, ramdiskFile); err != nil {
			return err
		}
		return linkOrCopy(iso, filepath.Join(dir, isoFile))
	})
	if err != nil {
		return "", err
	}
	return s.httpURL + "/n/" + rec.Token + "/" + isoFile, nil
}

// buildISO returns the cache path of the image of in, building it on the
// first request; concurrent requests for the same image share one build.
func (s *Service) buildISO(ctx context.Context, in isoimage.Input) (string, error) {
	h := sha256.New()
	for _, f := range []string{in.Kernel, in.Ramdisk, s.loaders.ISOLinux, s.loaders.LDLinux, s.loaders.EFI} {
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	io.WriteString(h, in.Cmdline)
	path := filepath.Join(s.cache.dir, "iso-"+hex.EncodeToString(h.Sum(nil))+".iso")
	_, err, _ := s.cache.flight.Do(path, func() (any, error) {
		if _, err := os.Stat(path); err == nil {
			return nil, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		s.log.Info("building ISO", "cmdline", in.Cmdline)
		return nil, isoimage.Build(ctx, path, in, s.loaders)
	})
	return path, err
}

func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\x00", filepath.Base(path))
	_, err = io.Copy(h, f)
	return err
}
