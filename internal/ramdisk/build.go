package ramdisk

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Spec is what an initramfs holds besides its fixed layout.
type Spec struct {
	Anvil   string // the static anvil binary, installed as /bin/anvil
	Busybox string // static busybox, installed as /bin/busybox
	// Release is the kernel release the modules are for: they go to
	// lib/modules/<Release>/ with their modules.dep, .alias and .softdep.
	Release  string
	Modules  []Module   // from Tree.Resolve
	Firmware []Firmware // installed under lib/firmware/
	// Files are more files: path in the initramfs → path on this machine
	// (GRUB's, with --grub); the mode is the file's.
	Files map[string]string
}

// Firmware is a firmware file put in the initramfs.
type Firmware struct {
	Name    string   `json:"name"`             // relative to /lib/firmware, as the module requests it
	Path    string   `json:"source,omitempty"` // on this machine
	Size    int64    `json:"size,omitempty"`
	Modules []string `json:"modules"` // the modules that request it
}

// Entries reads the files of s and lays out the archive: /init, the
// udhcpc script, busybox, anvil, the modules with their index files, the
// firmware and the directories they all need.
func Entries(s Spec) ([]Entry, error) {
	for _, p := range []string{s.Anvil, s.Busybox} {
		if err := checkStatic(p); err != nil {
			return nil, err
		}
	}
	if len(s.Modules) > 0 && s.Release == "" {
		return nil, errors.New("ramdisk: modules without a kernel release")
	}
	busybox, err := os.ReadFile(s.Busybox)
	if err != nil {
		return nil, err
	}
	anvil, err := os.ReadFile(s.Anvil)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	dirs := map[string]bool{}
	var mkdir func(name string, perm uint32)
	mkdir = func(name string, perm uint32) {
		if name == "." || name == "" || dirs[name] {
			return
		}
		mkdir(path.Dir(name), 0o755)
		dirs[name] = true
		entries = append(entries, Entry{Name: name, Mode: TypeDir | perm})
	}
	file := func(name string, perm uint32, data []byte) {
		mkdir(path.Dir(name), 0o755)
		entries = append(entries, Entry{Name: name, Mode: TypeRegular | perm, Data: data})
	}
	for _, d := range []string{"bin", "dev", "etc", "proc", "sys", "run", "lib/modules", "lib/firmware", "usr/share/udhcpc"} {
		mkdir(d, 0o755)
	}
	mkdir("tmp", 0o1777)
	entries = append(entries,
		Entry{Name: "dev/console", Mode: TypeCharDev | 0o600, DevMajor: 5, DevMinor: 1},
		Entry{Name: "bin/sh", Mode: TypeSymlink | 0o777, Link: "busybox"})
	file("bin/busybox", 0o755, busybox)
	file("bin/anvil", 0o755, anvil)
	file(dhcpScript, 0o755, []byte(udhcpcScript))
	file("init", 0o755, []byte(InitScript()))
	if len(s.Modules) > 0 {
		dir := "lib/modules/" + s.Release
		for _, m := range s.Modules {
			b, err := os.ReadFile(m.Path)
			if err != nil {
				return nil, err
			}
			file(dir+"/"+m.Rel, 0o644, b)
		}
		dep, alias, soft := DepFiles(s.Modules)
		file(dir+"/modules.dep", 0o644, dep)
		file(dir+"/modules.alias", 0o644, alias)
		file(dir+"/modules.softdep", 0o644, soft)
	}
	for _, f := range s.Firmware {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		file("lib/firmware/"+f.Name, 0o644, b)
	}
	names := make([]string, 0, len(s.Files))
	for name := range s.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		src := s.Files[name]
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		file(name, uint32(st.Mode().Perm()), b)
	}
	return entries, nil
}

// WriteInitramfs writes the initramfs of s to path (gzip-compressed newc
// cpio), replacing it only once complete, and returns the archive's
// uncompressed size.
func WriteInitramfs(path string, s Spec) (int64, error) {
	entries, err := Entries(s)
	if err != nil {
		return 0, err
	}
	var raw bytes.Buffer
	if err := WriteNewc(&raw, entries); err != nil {
		return 0, err
	}
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return 0, err
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
		return 0, fmt.Errorf("write initramfs %s: %w", path, err)
	}
	return int64(raw.Len()), os.Rename(tmp, path)
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
	OutputDir  string // receives vmlinuz, initramfs and ramdisk.json (created if missing)
	Anvil      string // the anvil binary ("": the running executable)
	Kernel     string // a kernel image ("": Debian's, fetched)
	ModulesDir string // with Kernel: its module tree, lib/modules/<release> ("": no modules)
	// Profile names the module set (ProfileModules; "": DefaultProfile);
	// Modules adds more by name. Their dependencies are added.
	Profile string
	Modules []string
	// FirmwareDirs are searched (in order) for the firmware the modules
	// request, after Debian's firmware-linux-free when the kernel is fetched.
	FirmwareDirs []string
	Busybox      string // a static busybox ("": Debian's busybox-static, fetched)
	// GRUB adds this machine's GRUB 2 (grub-install, its libraries, the
	// i386-pc and x86_64-efi files) and the file system modules, with which
	// the agent installs GRUB into partition images that have none.
	GRUB     bool
	CacheDir string // downloads ("": DefaultCacheDir)
	Log      *slog.Logger
}

// Result is what Build wrote; its Manifest is also ramdisk.json.
type Result struct {
	Kernel, Initramfs, ManifestPath string // absolute paths
	Manifest                        Manifest
}

// Manifest describes a built ramdisk (ramdisk.json beside it).
type Manifest struct {
	KernelVersion   string           `json:"kernel_version,omitempty"`
	KernelPackage   string           `json:"kernel_package,omitempty"`
	Profile         string           `json:"profile"`
	Kernel          ManifestFile     `json:"kernel"`
	Initramfs       ManifestFile     `json:"initramfs"`
	Uncompressed    int64            `json:"initramfs_uncompressed_size"`
	TotalSize       int64            `json:"total_size"` // kernel + initramfs bytes
	Modules         []ManifestModule `json:"modules"`
	ModulesSize     int64            `json:"modules_size"`
	Firmware        []Firmware       `json:"firmware"`
	FirmwareMissing []Firmware       `json:"firmware_missing"`
	// GRUB lists the GRUB files of --grub (paths in the initramfs) and
	// their total size.
	GRUB     []string `json:"grub,omitempty"`
	GRUBSize int64    `json:"grub_size,omitempty"`
}

// ManifestFile is one output file.
type ManifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ManifestModule is one module of the initramfs.
type ManifestModule struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"` // under lib/modules/<kernel_version>/
	Size     int64    `json:"size"`
	Depends  []string `json:"depends,omitempty"`
	Firmware []string `json:"firmware,omitempty"`
}

// Build assembles the deploy ramdisk into o.OutputDir: the kernel as
// vmlinuz, the initramfs as initramfs and its manifest as ramdisk.json.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.OutputDir == "" {
		return Result{}, errors.New("ramdisk: an output directory is required")
	}
	if o.ModulesDir != "" && o.Kernel == "" {
		return Result{}, errors.New("ramdisk: a modules directory goes with a kernel image")
	}
	if o.Profile == "" {
		o.Profile = DefaultProfile
	}
	names, err := ProfileModules(o.Profile)
	if err != nil {
		return Result{}, err
	}
	names = append(names, o.Modules...)
	var grub map[string]string
	if o.GRUB {
		if grub, err = GRUBFiles(); err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
		names = append(names, grubFSModules...)
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
	fwDirs := o.FirmwareDirs
	if o.Kernel == "" {
		if k, err = fetch.Kernel(ctx); err != nil {
			return Result{}, fmt.Errorf("ramdisk: kernel: %w", err)
		}
		if fw, err := fetch.Firmware(ctx); err != nil {
			if o.Log != nil {
				o.Log.Warn("no firmware from firmware-linux-free", "err", err)
			}
		} else {
			fwDirs = append([]string{fw}, fwDirs...)
		}
	} else {
		k = Kernel{Vmlinuz: o.Kernel, ModulesDir: o.ModulesDir}
		if o.ModulesDir == "" && o.Log != nil {
			o.Log.Warn("no module tree given (--modules-dir): the ramdisk holds no modules, the kernel's drivers must be built in")
		}
	}
	m := Manifest{KernelPackage: k.Package, Profile: o.Profile, Modules: []ManifestModule{}, Firmware: []Firmware{}, FirmwareMissing: []Firmware{}}
	var mods []Module
	if k.ModulesDir != "" {
		tree, err := OpenTree(k.ModulesDir)
		if err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
		for _, opt := range optionalModules {
			if tree.Has(opt) { // absent: built into the kernel, or not built
				names = append(names, opt)
			}
		}
		if mods, err = tree.Resolve(names); err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
		if m.KernelVersion, err = Release(mods); err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
	} else if len(o.Modules) > 0 {
		return Result{}, errors.New("ramdisk: --modules needs the kernel's module tree (a fetched kernel, or --kernel with --modules-dir)")
	}
	for _, mod := range mods {
		m.Modules = append(m.Modules, ManifestModule{Name: mod.Name, Path: mod.Rel, Size: mod.Size, Depends: mod.Depends, Firmware: mod.Firmware})
		m.ModulesSize += mod.Size
	}
	m.Firmware, m.FirmwareMissing = findFirmware(mods, fwDirs)
	for name, src := range grub {
		st, err := os.Stat(src)
		if err != nil {
			return Result{}, fmt.Errorf("ramdisk: %w", err)
		}
		m.GRUB = append(m.GRUB, name)
		m.GRUBSize += st.Size()
	}
	sort.Strings(m.GRUB)
	if o.Busybox == "" {
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
	r := Result{Kernel: filepath.Join(out, "vmlinuz"), Initramfs: filepath.Join(out, "initramfs"),
		ManifestPath: filepath.Join(out, "ramdisk.json")}
	if err := copyFile(r.Kernel+".tmp", k.Vmlinuz, 0o644); err != nil {
		return Result{}, fmt.Errorf("ramdisk: kernel: %w", err)
	}
	if err := os.Rename(r.Kernel+".tmp", r.Kernel); err != nil {
		return Result{}, err
	}
	m.Uncompressed, err = WriteInitramfs(r.Initramfs, Spec{Anvil: o.Anvil, Busybox: o.Busybox,
		Release: m.KernelVersion, Modules: mods, Firmware: m.Firmware, Files: grub})
	if err != nil {
		return Result{}, fmt.Errorf("ramdisk: %w", err)
	}
	if m.Kernel, err = describe(r.Kernel); err != nil {
		return Result{}, err
	}
	if m.Initramfs, err = describe(r.Initramfs); err != nil {
		return Result{}, err
	}
	m.TotalSize = m.Kernel.Size + m.Initramfs.Size
	r.Manifest = m
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(r.ManifestPath+".tmp", append(b, '\n'), 0o644); err != nil {
		return Result{}, err
	}
	return r, os.Rename(r.ManifestPath+".tmp", r.ManifestPath)
}

// findFirmware looks up every firmware file mods request in dirs (first
// found wins) and returns those found and those missing, each once.
func findFirmware(mods []Module, dirs []string) (found, missing []Firmware) {
	byName := map[string]*Firmware{}
	var order []string
	for _, m := range mods {
		for _, fw := range m.Firmware {
			if f := byName[fw]; f != nil {
				f.Modules = append(f.Modules, m.Name)
				continue
			}
			byName[fw] = &Firmware{Name: fw, Modules: []string{m.Name}}
			order = append(order, fw)
		}
	}
	found, missing = []Firmware{}, []Firmware{}
	for _, name := range order {
		f := byName[name]
		for _, d := range dirs {
			p := filepath.Join(d, filepath.FromSlash(name))
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				f.Path, f.Size = p, st.Size()
				break
			}
		}
		if f.Path != "" {
			found = append(found, *f)
		} else {
			missing = append(missing, *f)
		}
	}
	return found, missing
}

// describe is a file's path, size and sha256.
func describe(path string) (ManifestFile, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return ManifestFile{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return ManifestFile{}, err
	}
	return ManifestFile{Path: path, Size: st.Size(), SHA256: sum}, nil
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
