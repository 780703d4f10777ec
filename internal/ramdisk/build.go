package ramdisk

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Spec is what an initramfs holds besides its fixed layout.
type Spec struct {
	Anvil   string   // the static anvil binary, installed as /bin/anvil
	Busybox string   // static busybox, installed as /bin/busybox
	Modules []string // .ko files, loaded in this order by /init
}

// Entries reads the files of s and lays out the archive: /init, the
// udhcpc script, busybox, anvil, the modules and the directories /init
// needs before busybox installs its links.
func Entries(s Spec) ([]Entry, error) {
	for _, p := range []string{s.Anvil, s.Busybox} {
		if err := checkStatic(p); err != nil {
			return nil, err
		}
	}
	busybox, err := os.ReadFile(s.Busybox)
	if err != nil {
		return nil, err
	}
	anvil, err := os.ReadFile(s.Anvil)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(s.Modules))
	for i, m := range s.Modules {
		names[i] = moduleName(m)
	}
	dir := func(name string, perm uint32) Entry { return Entry{Name: name, Mode: TypeDir | perm} }
	entries := []Entry{
		dir("bin", 0o755), dir("dev", 0o755),
		{Name: "dev/console", Mode: TypeCharDev | 0o600, DevMajor: 5, DevMinor: 1},
		dir("etc", 0o755), dir("proc", 0o755), dir("sys", 0o755), dir("tmp", 0o1777), dir("run", 0o755),
		dir("lib", 0o755), dir("lib/modules", 0o755), dir(modulesDir, 0o755),
		dir("usr", 0o755), dir("usr/share", 0o755), dir("usr/share/udhcpc", 0o755),
		{Name: "bin/busybox", Mode: TypeRegular | 0o755, Data: busybox},
		{Name: "bin/sh", Mode: TypeSymlink | 0o777, Link: "busybox"},
		{Name: "bin/anvil", Mode: TypeRegular | 0o755, Data: anvil},
		{Name: dhcpScript, Mode: TypeRegular | 0o755, Data: []byte(udhcpcScript)},
		{Name: "init", Mode: TypeRegular | 0o755, Data: []byte(InitScript(names))},
	}
	for i, m := range s.Modules {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		entries = append(entries, Entry{Name: modulesDir + "/" + names[i] + ".ko", Mode: TypeRegular | 0o644, Data: b})
	}
	return entries, nil
}

// WriteInitramfs writes the initramfs of s to path (gzip-compressed newc
// cpio), replacing it only once complete.
func WriteInitramfs(path string, s Spec) error {
	entries, err := Entries(s)
	if err != nil {
		return err
	}
	var raw bytes.Buffer
	if err := WriteNewc(&raw, entries); err != nil {
		return err
	}
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
	_, err = zw.Write(raw.Bytes())
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write initramfs %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// checkStatic fails for a file that is not an ELF executable or that needs
// a dynamic loader (nothing in the ramdisk provides one).
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the ramdisk needs a static binary (for anvil: CGO_ENABLED=0 go build)", path)
		}
	}
	return nil
}

// Options says where Build takes its parts from.
type Options struct {
	OutputDir  string // receives vmlinuz and initramfs (created if missing)
	Anvil      string // the anvil binary ("": the running executable)
	Kernel     string // a kernel image ("": Debian's, fetched)
	ModulesDir string // with Kernel: where its virtio .ko files are ("": none, built in)
	Busybox    string // a static busybox ("": Debian's busybox-static, fetched)
	CacheDir   string // downloads ("": DefaultCacheDir)
	Log        *slog.Logger
}

// Result is what Build wrote.
type Result struct {
	Kernel, Initramfs             string // absolute paths
	KernelSHA256, InitramfsSHA256 string
	KernelPackage                 string   // the Debian package, when fetched
	Modules                       []string // module names, in load order
}

// Build assembles the deploy ramdisk into o.OutputDir: the kernel as
// vmlinuz and the initramfs as initramfs.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.OutputDir == "" {
		return Result{}, errors.New("ramdisk: an output directory is required")
	}
	if o.ModulesDir != "" && o.Kernel == "" {
		return Result{}, errors.New("ramdisk: a modules directory goes with a kernel image")
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Anvil == "" {
		exe, err := os.Executable()
		if err != nil {
			return Result{}, fmt.Errorf("ramdisk: the running executable: %w", err)
		}
		o.Anvil = exe
	}
	fetch := Fetcher{CacheDir: o.CacheDir, Log: o.Log}
	var k Kernel
	switch {
	case o.Kernel == "":
		var err error
		if k, err = fetch.Kernel(ctx); err != nil {
			return Result{}, fmt.Errorf("ramdisk: kernel: %w", err)
		}
	case o.ModulesDir != "":
		mods, err := FindModules(o.ModulesDir, VirtioModules())
		if err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
		k = Kernel{Vmlinuz: o.Kernel, Modules: mods}
	default:
		k = Kernel{Vmlinuz: o.Kernel}
	}
	if o.Busybox == "" {
		var err error
		if o.Busybox, err = fetch.Busybox(ctx); err != nil {
			return Result{}, fmt.Errorf("ramdisk: busybox: %w", err)
		}
	}
	out, err := filepath.Abs(o.OutputDir)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Result{}, err
	}
	r := Result{Kernel: filepath.Join(out, "vmlinuz"), Initramfs: filepath.Join(out, "initramfs"), KernelPackage: k.Package}
	for _, m := range k.Modules {
		r.Modules = append(r.Modules, moduleName(m))
	}
	if err := copyFile(r.Kernel+".tmp", k.Vmlinuz, 0o644); err != nil {
		return Result{}, fmt.Errorf("ramdisk: kernel: %w", err)
	}
	if err := os.Rename(r.Kernel+".tmp", r.Kernel); err != nil {
		return Result{}, err
	}
	if err := WriteInitramfs(r.Initramfs, Spec{Anvil: o.Anvil, Busybox: o.Busybox, Modules: k.Modules}); err != nil {
		return Result{}, fmt.Errorf("ramdisk: %w", err)
	}
	if r.KernelSHA256, err = fileSHA256(r.Kernel); err != nil {
		return Result{}, err
	}
	if r.InitramfsSHA256, err = fileSHA256(r.Initramfs); err != nil {
		return Result{}, err
	}
	return r, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("sha256 of %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
