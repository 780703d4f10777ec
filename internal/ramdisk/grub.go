package ramdisk

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// GRUB is what `anvil ramdisk build --grub` adds so that the agent can put
// GRUB 2 on a partition image that carries none of its own
// (image.install_bootloader): this machine's grub-install with the shared
// libraries it loads, GRUB's platform files for BIOS (i386-pc) and UEFI
// (x86_64-efi) — the images and lists, and the modules a boot from an
// ext2/3/4 or FAT root on an MBR or GPT disk loads, with their
// dependencies — and the kernel modules that mount those file systems.
// About 5 MiB more, gzip-compressed; the default ramdisk has none of it.

// GRUBInstall is where grub-install is, on the build machine and in the
// ramdisk (Debian's grub2-common).
const GRUBInstall = "/usr/sbin/grub-install"

// GRUBLibDir holds GRUB's platform directories (grub-pc-bin,
// grub-efi-amd64-bin).
const GRUBLibDir = "/usr/lib/grub"

// GRUBPlatforms are the platform directories the ramdisk carries.
var GRUBPlatforms = []string{"i386-pc", "x86_64-efi"}

// grubModules are the GRUB modules a local boot needs: disk access,
// partition tables, the file systems, and what a grub.cfg uses (the
// agent's own and grub-mkconfig's). Their dependencies (moddep.lst) join.
var grubModules = []string{
	"biosdisk", "part_msdos", "part_gpt", "ext2", "fat", "normal", "linux", "search", "search_fs_uuid",
	"search_fs_file", "search_label", "echo", "test", "configfile", "gzio", "xzio", "lzopio", "boot",
	"minicmd", "chain", "serial", "terminal", "sleep", "loadenv", "all_video", "gfxterm", "font", "png",
	"efi_gop", "efi_uga", "video_bochs", "video_cirrus", "true", "halt", "reboot", "cat", "ls",
}

// grubFSModules are the kernel modules with which the agent mounts a
// partition image's root (ext2/3/4, with the crc32c its metadata checksums
// need: ext4 names it by a softdep alias, which the kernel then requests)
// and its EFI system partition (vfat with Linux's default code page and
// character set).
var grubFSModules = []string{"ext4", "crc32c_generic", "vfat", "nls_cp437", "nls_utf8", "nls_ascii"}

// GRUBFiles lists the files of GRUB 2 as --grub adds them to the ramdisk:
// path in the ramdisk → path on this machine; more files (other GRUB
// programs, scripts) join with the shared libraries the executables among
// them load. A missing piece is an error naming the Debian package.
func GRUBFiles(more ...string) (map[string]string, error) {
	if _, err := os.Stat(GRUBInstall); err != nil {
		return nil, fmt.Errorf("--grub: %s is missing on this machine (apt-get install grub2-common)", GRUBInstall)
	}
	files := map[string]string{}
	for _, bin := range append([]string{GRUBInstall}, more...) {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("GRUB: %w (Debian's grub-common, grub2-common)", err)
		}
		files[strings.TrimPrefix(bin, "/")] = bin
		if f, err := elf.Open(bin); err != nil {
			continue // a script
		} else {
			f.Close()
		}
		libs, err := ELFClosure(bin)
		if err != nil {
			return nil, fmt.Errorf("--grub: %w", err)
		}
		for _, l := range libs {
			files[strings.TrimPrefix(l, "/")] = l
		}
	}
	pkg := map[string]string{"i386-pc": "grub-pc-bin", "x86_64-efi": "grub-efi-amd64-bin"}
	for _, plat := range GRUBPlatforms {
		dir := filepath.Join(GRUBLibDir, plat)
		dep, err := os.ReadFile(filepath.Join(dir, "moddep.lst"))
		if err != nil {
			return nil, fmt.Errorf("--grub: GRUB's %s files are missing on this machine (apt-get install %s)", plat, pkg[plat])
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		mods := grubModuleClosure(dep, grubModules)
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() {
				continue
			}
			if m, ok := strings.CutSuffix(name, ".mod"); ok && !mods[m] {
				continue
			}
			if strings.HasSuffix(name, ".module") || strings.HasSuffix(name, ".exec") || name == "gdb_grub" || strings.HasSuffix(name, ".py") {
				continue // debugging copies
			}
			files[strings.TrimPrefix(filepath.Join(dir, name), "/")] = filepath.Join(dir, name)
		}
	}
	return files, nil
}

// grubModuleClosure is want with every module they need, per moddep.lst
// ("name: dep dep ..."); a module the platform lacks (biosdisk on EFI) is
// left out.
func grubModuleClosure(moddep []byte, want []string) map[string]bool {
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(moddep))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if ok {
			deps[strings.TrimSpace(name)] = strings.Fields(rest)
		}
	}
	out := map[string]bool{}
	var add func(string)
	add = func(m string) {
		if out[m] {
			return
		}
		if _, ok := deps[m]; !ok {
			return
		}
		out[m] = true
		for _, d := range deps[m] {
			add(d)
		}
	}
	for _, m := range want {
		add(m)
	}
	return out
}

// libDirs are where the dynamic loader of a Debian amd64 system looks.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// ELFClosure lists what the dynamically linked executable bin needs to
// run: its program interpreter and every shared library it loads,
// directly or not (DT_NEEDED), found in libDirs, each once, sorted.
func ELFClosure(bin string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var visit func(string) error
	visit = func(p string) error {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: interpreter: %w", p, err)
			}
			interp := string(bytes.TrimRight(b, "\x00"))
			if !seen[interp] {
				seen[interp] = true
				seen[filepath.Base(interp)] = true // libc names it too: one copy
				out = append(out, interp)
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, l := range libs {
			if seen[l] {
				continue
			}
			found := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(d, l)); err == nil {
					found = filepath.Join(d, l)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is in none of %s", p, l, strings.Join(libDirs, ", "))
			}
			if seen[found] {
				continue
			}
			seen[found], seen[l] = true, true
			out = append(out, found)
			if err := visit(found); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(bin); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}
