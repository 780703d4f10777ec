package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/anvil-metal/anvil/internal/agent/efitest"
	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/testbin"
)

func needEFITools(t *testing.T) {
	t.Helper()
	testbin.Need(t, "mkfs.fat", "dosfstools")
	testbin.Need(t, "mcopy", "mtools")
}

func buildESPDisk(t *testing.T, s efitest.Spec) efitest.Image {
	t.Helper()
	needEFITools(t)
	img, err := efitest.Build(context.Background(), t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// TestFATReader: file systems made by mkfs.fat and filled by mtools, in
// each FAT width, read back in place: names (8.3, lower case, long names),
// directory order, and contents spanning many clusters.
func TestFATReader(t *testing.T) {
	files := []efitest.File{
		{Path: "EFI/BOOT/BOOTX64.EFI", Data: randBytes(3000)},
		{Path: "EFI/debian/grubx64.efi", Data: randBytes(150_000)},
		{Path: "EFI/debian/BOOTX64.CSV", Data: []byte("x")},
		{Path: "EFI/A Long Directory Name/a-rather-long-file-name.conf", Data: []byte("hello")},
		{Path: "empty", Data: nil},
	}
	for _, tc := range []struct {
		bits int
		esp  int64
	}{{12, 4}, {16, 20}, {32, 40}} {
		t.Run(fmt.Sprintf("FAT%d", tc.bits), func(t *testing.T) {
			img := buildESPDisk(t, efitest.Spec{SizeMiB: tc.esp + 2, ESPMiB: tc.esp, FATBits: tc.bits, Files: files})
			f, err := os.Open(img.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fs, err := openFAT(f, img.ESP.Start, img.ESP.Size)
			if err != nil {
				t.Fatal(err)
			}
			if fs.bits != tc.bits {
				t.Fatalf("read as FAT%d", fs.bits)
			}
			got := map[string][]byte{}
			var order []string
			err = fs.walk(func(dir string, ents []fatEntry) (bool, error) {
				order = append(order, dir)
				for _, e := range ents {
					b, err := fs.readFile(e)
					if err != nil {
						return false, err
					}
					got[filepath.Join(dir, e.Name)] = b
				}
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"", "EFI", "EFI/BOOT", "EFI/debian", "EFI/A Long Directory Name"}; strings.Join(order, "|") != strings.Join(want, "|") {
				t.Errorf("directories visited %q, want %q", order, want)
			}
			if len(got) != len(files) {
				t.Errorf("found %d files, want %d: %v", len(got), len(files), keys(got))
			}
			for _, want := range files {
				if b, ok := got[want.Path]; !ok || !bytes.Equal(b, want.Data) {
					t.Errorf("%s: found %v, %d bytes, want %d", want.Path, ok, len(b), len(want.Data))
				}
			}
		})
	}
	if _, err := openFAT(bytes.NewReader(make([]byte, 4096)), 0, 4096); err == nil {
		t.Error("zeros read as a FAT file system")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// utf16CSV is a shim BOOTX64.CSV: UTF-16LE with a byte order mark.
func utf16CSV(s string) []byte {
	b := []byte{0xff, 0xfe}
	for _, c := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return b
}

// efibootmgrV is `efibootmgr -v` reading the variable store dir
// (libefivar's EFIVARFS_PATH): the peer that shows what the firmware's
// boot manager will find.
func efibootmgrV(t *testing.T, dir string) string {
	t.Helper()
	bin := testbin.Need(t, "efibootmgr", "efibootmgr")
	cmd := exec.Command(bin, "-v")
	cmd.Env = append(os.Environ(), "EFIVARFS_PATH="+dir+"/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("efibootmgr -v: %v\n%s", err, out)
	}
	return string(out)
}

// seedVars is a variable store with a firmware entry (Boot0000, first in
// BootOrder) and a stale entry labelled ironic1 (Boot0003).
func seedVars(t *testing.T) efiVars {
	t.Helper()
	v := efiVars{dir: t.TempDir()}
	for n, o := range map[uint16]loadOption{
		0: {Active: true, Description: "UEFI Shell", HD: hdPath{Partition: 9, Start: 1, Size: 2}, File: `\shell.efi`},
		3: {Active: true, Description: "ironic1", HD: hdPath{Partition: 7, Start: 34, Size: 100}, File: `\EFI\old\BOOTX64.EFI`},
	} {
		b, err := o.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.set(bootName(n), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.setBootOrder([]uint16{0, 3}); err != nil {
		t.Fatal(err)
	}
	return v
}

func bootAgent(t *testing.T, diskPath, efivars string) *Agent {
	t.Helper()
	a, err := New(Config{APIURL: "http://127.0.0.1:1", Disk: diskPath, MACs: []string{"x"}, RootDir: t.TempDir(), EFIVarsDir: efivars})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestInstallBootloaderUEFIEntry: in UEFI mode, for a whole-disk image
// (no root UUID, as Ironic sends it), the agent writes a boot entry for the
// loader on the image's EFI system partition, replacing the entry of the
// same label and put first in BootOrder; efibootmgr -v lists it with the
// partition's number, start, size and GUID. The loader is IPA's choice:
// EFI/BOOT/BOOTX64.EFI labelled ironic1, or what a shim CSV names.
func TestInstallBootloaderUEFIEntry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		files       []efitest.File
		label, file string
		order       string // BootOrder after
	}{
		{"fallback loader", []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: randBytes(5000)}, {Path: "EFI/BOOT/grubx64.efi", Data: randBytes(100)}},
			"ironic1", `\EFI\BOOT\BOOTX64.EFI`, "0001,0000"},
		{"shim csv", []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: randBytes(5000)}, {Path: "EFI/debian/shimx64.efi", Data: randBytes(100)},
			{Path: "EFI/debian/BOOTX64.CSV", Data: utf16CSV("shimx64.efi,debian,,This is the boot entry for debian\n")}},
			"debian", `\EFI\debian\shimx64.efi`, "0001,0000,0003"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := buildESPDisk(t, efitest.Spec{SizeMiB: 64, ESPMiB: 33, Files: tc.files, RootMiB: 20})
			vars := seedVars(t)
			a := bootAgent(t, img.Path, vars.dir)
			res, err := a.installBootloader(context.Background(), map[string]any{"root_uuid": nil,
				"efi_system_part_uuid": nil, "prep_boot_part_uuid": nil, "target_boot_mode": "uefi"}, nil)
			if err != nil || res != nil {
				t.Fatalf("install_bootloader = %v, %v; want IPA's null result", res, err)
			}
			out := efibootmgrV(t, vars.dir)
			t.Logf("efibootmgr -v:\n%s", out)
			hd := fmt.Sprintf("HD(1,GPT,%s,0x%x,0x%x)/File(%s)", strings.ToLower(img.ESP.UUID), img.ESP.Start/512, img.ESP.Size/512, tc.file)
			entry := regexp.MustCompile(`(?m)^Boot0001\* ` + regexp.QuoteMeta(tc.label) + `\s+` + regexp.QuoteMeta(hd) + `\s*$`)
			if !entry.MatchString(out) {
				t.Errorf("efibootmgr -v does not list Boot0001* %s %s", tc.label, hd)
			}
			if !strings.Contains(out, "BootOrder: "+tc.order+"\n") {
				t.Errorf("BootOrder is not %s", tc.order)
			}
			if tc.label == "ironic1" && strings.Contains(out, `\EFI\old\BOOTX64.EFI`) {
				t.Errorf("the stale ironic1 entry survived")
			}
			if strings.Count(out, "\nBoot0") != 2+btoi(tc.label != "ironic1") {
				t.Errorf("unexpected number of entries")
			}
			// A second run replaces its own entry rather than adding one.
			if _, err := a.installBootloader(context.Background(), map[string]any{"root_uuid": nil}, nil); err != nil {
				t.Fatal(err)
			}
			if again := efibootmgrV(t, vars.dir); strings.Count(again, "* "+tc.label+"\t") != 1 {
				t.Errorf("after a second install_bootloader:\n%s", again)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestInstallBootloaderCases: IPA's other outcomes. UEFI without an EFI
// system partition fails with IPA's message (unless
// ignore_bootloader_failure); an ESP without a loader, and BIOS mode, are
// no-ops for a whole-disk image; a partition image whose disk has no table,
// or no partition with its root UUID, fails saying so before anything is
// mounted; nothing is written to NVRAM in those cases. (GRUB's install
// itself mounts and runs grub-install: test/realos.)
func TestInstallBootloaderCases(t *testing.T) {
	noESP := filepath.Join(t.TempDir(), "raw.img")
	if err := os.WriteFile(noESP, randBytes(1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := buildESPDisk(t, efitest.Spec{SizeMiB: 40, ESPMiB: 33, Files: []efitest.File{{Path: "EFI/debian/grubx64.efi", Data: []byte("x")}}})
	for _, tc := range []struct {
		name    string
		disk    string
		uefi    bool
		params  map[string]any
		wantErr string
	}{
		{"uefi, no ESP", noESP, true, map[string]any{"root_uuid": nil}, "No EFI partition could be detected on device"},
		{"uefi, no ESP, failure ignored", noESP, true, map[string]any{"root_uuid": nil, "ignore_bootloader_failure": true}, ""},
		{"uefi, ESP without a loader", empty.Path, true, map[string]any{"root_uuid": nil}, ""},
		{"bios, whole disk", noESP, false, map[string]any{"root_uuid": nil}, ""},
		{"bios, 0x00000000", noESP, false, map[string]any{"root_uuid": "0x00000000"}, ""},
		{"bios, partition image, no table", noESP, false, map[string]any{"root_uuid": "c3a4ba1c-6b9a-4b8e-9d3c-1f2e3d4c5b6a"},
			"installing GRUB 2 on " + noESP + " failed: " + noESP + ": the disk has no partition table"},
		{"bios, partition image, no such root", empty.Path, false, map[string]any{"root_uuid": "c3a4ba1c-6b9a-4b8e-9d3c-1f2e3d4c5b6a"},
			"no partition of " + empty.Path + " holds the root file system c3a4ba1c-6b9a-4b8e-9d3c-1f2e3d4c5b6a"},
		{"bios, partition image, failure ignored", empty.Path, false, map[string]any{"root_uuid": "c3a4ba1c-6b9a-4b8e-9d3c-1f2e3d4c5b6a",
			"ignore_bootloader_failure": true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := ""
			if tc.uefi {
				vars = t.TempDir()
			}
			a := bootAgent(t, tc.disk, vars)
			res, err := a.installBootloader(context.Background(), tc.params, nil)
			if tc.wantErr == "" && (err != nil || res != nil) || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("install_bootloader = %v, %v; want error %q", res, err, tc.wantErr)
			}
			if vars != "" {
				if ents, _ := os.ReadDir(vars); len(ents) != 0 {
					t.Errorf("%d variables written", len(ents))
				}
			}
		})
	}
}

// TestInstallBootloaderCommand: through the command API the command is
// asynchronous and succeeds with IPA's null result.
func TestInstallBootloaderCommand(t *testing.T) {
	img := buildESPDisk(t, efitest.Spec{SizeMiB: 40, ESPMiB: 33, Files: []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: []byte("MZ")}}})
	vars := t.TempDir()
	a := bootAgent(t, img.Path, vars)
	a.token = "tok"
	api := newCmdAPI(t, a)
	res := api.run("tok", ipa.CmdInstallBootloader, map[string]any{"root_uuid": nil, "target_boot_mode": "uefi"})
	if res.Status != ipa.StatusSucceeded || res.Result != nil {
		t.Fatalf("install_bootloader = %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(vars, "Boot0000-"+efiGlobalVariable)); err != nil || binary.LittleEndian.Uint32(b) != efiVarAttrs {
		t.Fatalf("Boot0000: %v", err)
	}
}

// TestLoadOptionRoundTrip: what MarshalBinary writes parseLoadOption reads.
func TestLoadOptionRoundTrip(t *testing.T) {
	o := loadOption{Active: true, Description: "débian ✓", File: `\EFI\débian\shimx64.efi`,
		HD: hdPath{Partition: 15, Start: 2048, Size: 1 << 20}}
	copy(o.HD.PartUUID[:], randBytes(16))
	b, err := o.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseLoadOption(b)
	if err != nil || got != o {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, o)
	}
	if _, err := (loadOption{File: "EFI/BOOT/BOOTX64.EFI"}).MarshalBinary(); err == nil {
		t.Error("a relative loader path was accepted")
	}
}

// TestInstallBootloaderBIOSMachine: an agent told its machine boots by
// BIOS (the emulator's, on a host that may be UEFI) writes no UEFI
// variable even for an image with an EFI system partition and a loader.
func TestInstallBootloaderBIOSMachine(t *testing.T) {
	img := buildESPDisk(t, efitest.Spec{SizeMiB: 40, ESPMiB: 33, Files: []efitest.File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: []byte("MZ")}}})
	vars := t.TempDir()
	a := bootAgent(t, img.Path, vars)
	a.cfg.BIOS = true
	if res, err := a.installBootloader(context.Background(), map[string]any{"root_uuid": nil, "target_boot_mode": "uefi"}, nil); err != nil || res != nil {
		t.Fatalf("install_bootloader = %v, %v", res, err)
	}
	if ents, _ := os.ReadDir(vars); len(ents) != 0 {
		t.Errorf("%d variables written by a BIOS machine's agent", len(ents))
	}
}
