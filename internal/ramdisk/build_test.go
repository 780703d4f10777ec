package ramdisk

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeKO writes a minimal ELF relocatable object holding a .modinfo
// section with the given key=value strings, as a kernel module carries.
func writeKO(t *testing.T, path string, info ...string) {
	t.Helper()
	var modinfo []byte
	for _, kv := range info {
		modinfo = append(append(modinfo, kv...), 0)
	}
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	infoOff := uint64(ehsize)
	strOff := infoOff + uint64(len(modinfo))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	var b bytes.Buffer
	ident := [16]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}
	b.Write(ident[:])
	le := binary.LittleEndian
	_ = binary.Write(&b, le, struct {
		Type, Machine                                        uint16
		Version                                              uint32
		Entry, Phoff, Shoff                                  uint64
		Flags                                                uint32
		Ehsize, Phentsize, Phnum, Shentsize, Shnum, Shstrndx uint16
	}{1, 62, 1, 0, 0, shOff, 0, ehsize, 0, 0, shentsize, 3, 2})
	b.Write(modinfo)
	b.Write(shstr)
	for uint64(b.Len()) < shOff {
		b.WriteByte(0)
	}
	type shdr struct {
		Name, Type             uint32
		Flags, Addr, Off, Size uint64
		Link, Info             uint32
		Addralign, Entsize     uint64
	}
	for _, s := range []shdr{{}, {1, 1, 2, 0, infoOff, uint64(len(modinfo)), 0, 0, 1, 0},
		{10, 3, 0, 0, strOff, uint64(len(shstr)), 0, 0, 1, 0}} {
		_ = binary.Write(&b, le, s)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

const testRelease = "6.1.0-test"

func vermagic() string { return "vermagic=" + testRelease + " SMP preempt mod_unload modversions " }

// fakeTree is a module tree with the vm profile's modules (and their real
// dependencies' shape: hyphenated file names, a softdep) plus an extra one
// that requests firmware.
func fakeTree(t *testing.T, dir string) {
	t.Helper()
	mods := map[string][]string{
		"kernel/drivers/virtio/virtio_ring.ko": {"alias=", "depends="},
		"kernel/drivers/virtio/virtio.ko":      {"depends=virtio_ring"},
		"kernel/drivers/virtio/virtio_pci.ko":  {"alias=pci:v00001AF4d*sv*sd*bc*sc*i*", "depends=virtio_ring,virtio"},
		"kernel/drivers/net/virtio_net.ko":     {"alias=virtio:d00000001v*", "depends=virtio_ring,virtio,net_failover"},
		"kernel/drivers/net/net_failover.ko":   {"depends=failover"},
		"kernel/net/core/failover.ko":          {"depends="},
		"kernel/drivers/block/virtio_blk.ko":   {"alias=virtio:d00000002v*", "depends=virtio,virtio_ring"},
		"kernel/drivers/scsi/virtio_scsi.ko":   {"alias=virtio:d00000008v*", "depends=scsi_mod,virtio,virtio_ring"},
		"kernel/drivers/scsi/scsi_mod.ko":      {"depends=scsi-common"},
		"kernel/drivers/scsi/scsi-common.ko":   {"depends="},
		"kernel/drivers/scsi/sd_mod.ko":        {"alias=scsi:t-0x00*", "depends=scsi_mod,crc-t10dif", "softdep=pre: crc32c"},
		"kernel/lib/crc-t10dif.ko":             {"depends=", "softdep=pre: crct10dif"},
		"kernel/crypto/crc32c.ko":              {"alias=crypto-crc32c", "depends="},
		"kernel/drivers/net/e1000.ko":          {"alias=pci:v00008086d0000100Esv*sd*bc*sc*i*", "depends="},
		"kernel/drivers/net/e1000e.ko":         {"alias=pci:v00008086d000010D3sv*sd*bc*sc*i*", "depends="},
		"kernel/drivers/ata/ahci.ko":           {"alias=pci:v*d*sv*sd*bc01sc06i01*", "depends=libahci,libata"},
		"kernel/drivers/ata/libahci.ko":        {"depends=libata"},
		"kernel/drivers/ata/libata.ko":         {"depends=scsi_mod"},
		"kernel/drivers/scsi/isci/isci.ko":     {"alias=pci:v00008086d00001D60sv*sd*bc*sc*i*", "depends=libata", "firmware=isci/isci_firmware.bin"},
		"kernel/drivers/net/tg3.ko":            {"depends=", "firmware=tigon/tg3.bin"},
		"kernel/drivers/unused.ko":             {"depends="},
	}
	for rel, info := range mods {
		name := strings.TrimSuffix(filepath.Base(rel), ".ko")
		writeKO(t, filepath.Join(dir, rel), append([]string{"name=" + CanonicalName(name), vermagic()}, info...)...)
	}
}

func TestParseModInfo(t *testing.T) {
	b := []byte("license=GPL\x00firmware=intel/ice/ddp/ice.pkg\x00alias=pci:v00008086d00001591sv*sd*bc*sc*i*\x00" +
		"alias=pci:v00008086d00001592sv*sd*bc*sc*i*\x00depends=nvme-core,libata\x00softdep=pre: crc32c post: foo\x00" +
		"name=ice\x00vermagic=6.1.0-57-amd64 SMP preempt mod_unload modversions \x00\x00")
	got := ParseModInfo(b)
	want := ModInfo{Name: "ice", Version: "6.1.0-57-amd64", Depends: []string{"nvme_core", "libata"}, SoftPre: []string{"crc32c"},
		Aliases:  []string{"pci:v00008086d00001591sv*sd*bc*sc*i*", "pci:v00008086d00001592sv*sd*bc*sc*i*"},
		Firmware: []string{"intel/ice/ddp/ice.pkg"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseModInfo =\n%+v\nwant\n%+v", got, want)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	fakeTree(t, dir)
	tree, err := OpenTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := tree.Resolve([]string{"virtio_net", "sd_mod", "virtio_pci", "scsi-common"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	pos := map[string]int{}
	for i, m := range mods {
		names = append(names, m.Name)
		pos[m.Name] = i
	}
	want := "virtio_ring virtio failover net_failover virtio_net crc32c scsi_common scsi_mod crc_t10dif sd_mod virtio_pci"
	if strings.Join(names, " ") != want {
		t.Errorf("Resolve = %s\nwant      %s", strings.Join(names, " "), want)
	}
	for _, m := range mods {
		for _, d := range m.Depends {
			if p, ok := pos[d]; !ok || p > pos[m.Name] {
				t.Errorf("%s comes before its dependency %s", m.Name, d)
			}
		}
	}
	if mods[pos["scsi_common"]].Rel != "kernel/drivers/scsi/scsi-common.ko" || mods[0].Size == 0 {
		t.Errorf("scsi_common = %+v", mods[pos["scsi_common"]])
	}
	if r, err := Release(mods); err != nil || r != testRelease {
		t.Errorf("Release = %q, %v", r, err)
	}
	if _, err := tree.Resolve([]string{"nosuch"}); err == nil {
		t.Error("a missing module resolved")
	}
	writeKO(t, filepath.Join(dir, "broken.ko"), "name=broken", vermagic(), "depends=gone")
	tree, _ = OpenTree(dir)
	if _, err := tree.Resolve([]string{"broken"}); err == nil || !strings.Contains(err.Error(), "gone (needed by broken)") {
		t.Errorf("missing dependency: %v", err)
	}
	writeKO(t, filepath.Join(dir, "a.ko"), "name=a", vermagic(), "depends=b")
	writeKO(t, filepath.Join(dir, "b.ko"), "name=b", vermagic(), "depends=a")
	tree, _ = OpenTree(dir)
	if _, err := tree.Resolve([]string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	writeKO(t, filepath.Join(dir, "other.ko"), "name=other", "vermagic=5.10.0-1-amd64 SMP")
	tree, _ = OpenTree(dir)
	mods, _ = tree.Resolve([]string{"virtio", "other"})
	if _, err := Release(mods); err == nil {
		t.Error("modules of two kernels accepted")
	}
}

func TestOpenTreeCompressedOnly(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "virtio.ko.xz"), nil, 0o644)
	if _, err := OpenTree(dir); err == nil || !strings.Contains(err.Error(), "compressed") {
		t.Errorf("OpenTree of compressed modules: %v", err)
	}
}

// DepFiles writes what depmod writes: a parse of them gives back each
// module's path, its load order and its aliases.
func TestDepFiles(t *testing.T) {
	dir := t.TempDir()
	fakeTree(t, dir)
	tree, _ := OpenTree(dir)
	mods, err := tree.Resolve([]string{"virtio_net", "sd_mod"})
	if err != nil {
		t.Fatal(err)
	}
	dep, alias, soft := DepFiles(mods)
	if !bytes.Contains(dep, []byte("kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n")) {
		t.Errorf("modules.dep:\n%s", dep)
	}
	if !bytes.Contains(alias, []byte("\nalias virtio:d00000001v* virtio_net\n")) || !bytes.Contains(alias, []byte("\nalias scsi:t-0x00* sd_mod\n")) {
		t.Errorf("modules.alias:\n%s", alias)
	}
	// crc_t10dif's softdep names crct10dif, not in the set: left out
	if want := "# Soft dependencies extracted from modules themselves.\nsoftdep sd_mod pre: crc32c\n"; string(soft) != want {
		t.Errorf("modules.softdep:\n%s", soft)
	}
	x, err := ParseDepIndex(dep, alias, soft)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(x.LoadOrder("sd_mod"), " "); got != "crc32c scsi_common scsi_mod crc_t10dif sd_mod" {
		t.Errorf("LoadOrder(sd_mod) = %s", got)
	}
}

func TestBuildWithGivenParts(t *testing.T) {
	dir := t.TempDir()
	anvil, busybox := filepath.Join(dir, "anvil"), filepath.Join(dir, "busybox")
	writeELF(t, anvil, false)
	writeELF(t, busybox, false)
	kernel := filepath.Join(dir, "bzImage")
	if err := os.WriteFile(kernel, []byte("kernel image"), 0o644); err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(dir, "lib", "modules", testRelease)
	fakeTree(t, mods)
	fw := filepath.Join(dir, "firmware")
	if err := os.MkdirAll(filepath.Join(fw, "isci"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(fw, "isci", "isci_firmware.bin"), []byte("isci fw"), 0o644)
	out := filepath.Join(dir, "out")
	r, err := Build(context.Background(), Options{OutputDir: out, Anvil: anvil, Busybox: busybox,
		Kernel: kernel, ModulesDir: mods, Profile: "vm", Modules: []string{"isci", "tg3"},
		FirmwareDirs: []string{fw}, CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kernel != filepath.Join(out, "vmlinuz") || r.Initramfs != filepath.Join(out, "initramfs") || r.ManifestPath != filepath.Join(out, "ramdisk.json") {
		t.Errorf("result paths %q %q %q", r.Kernel, r.Initramfs, r.ManifestPath)
	}
	if k, _ := os.ReadFile(r.Kernel); string(k) != "kernel image" {
		t.Errorf("vmlinuz = %q", k)
	}
	m := r.Manifest
	if sum := sha256.Sum256([]byte("kernel image")); m.Kernel.SHA256 != hex.EncodeToString(sum[:]) || m.Kernel.Size != 12 {
		t.Errorf("kernel %+v", m.Kernel)
	}
	z, _ := os.ReadFile(r.Initramfs)
	if sum := sha256.Sum256(z); m.Initramfs.SHA256 != hex.EncodeToString(sum[:]) || m.Initramfs.Size != int64(len(z)) {
		t.Errorf("initramfs %+v", m.Initramfs)
	}
	if m.KernelVersion != testRelease || m.Profile != "vm" || m.TotalSize != m.Kernel.Size+m.Initramfs.Size {
		t.Errorf("manifest %+v", m)
	}
	var onDisk Manifest
	b, _ := os.ReadFile(r.ManifestPath)
	if err := json.Unmarshal(b, &onDisk); err != nil || !reflect.DeepEqual(onDisk, m) {
		t.Errorf("ramdisk.json (%v) differs from the result:\n%s", err, b)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if m.Uncompressed != int64(len(raw)) {
		t.Errorf("uncompressed size %d, archive %d", m.Uncompressed, len(raw))
	}
	files := map[string]Entry{}
	for _, e := range readNewc(t, raw) {
		if _, dup := files[e.Name]; dup {
			t.Errorf("%s twice in the archive", e.Name)
		}
		if d := filepathDir(e.Name); d != "" {
			if p, ok := files[d]; !ok || p.Mode&typeMask != TypeDir {
				t.Errorf("%s comes before its directory %s", e.Name, d)
			}
		}
		files[e.Name] = e
	}
	anvilBytes, _ := os.ReadFile(anvil)
	if e := files["bin/anvil"]; !bytes.Equal(e.Data, anvilBytes) || e.Mode != TypeRegular|0o755 {
		t.Errorf("bin/anvil: mode %o, %d bytes", e.Mode, len(e.Data))
	}
	if e := files["init"]; e.Mode != TypeRegular|0o755 || string(e.Data) != InitScript() {
		t.Errorf("init: mode %o:\n%s", e.Mode, e.Data)
	}
	if e := files["dev/console"]; e.Mode != TypeCharDev|0o600 || e.DevMajor != 5 || e.DevMinor != 1 {
		t.Errorf("dev/console = %+v", e)
	}
	// the vm profile, --modules and their dependencies; nothing else
	var names []string
	var size int64
	for _, mod := range m.Modules {
		names = append(names, mod.Name)
		size += mod.Size
		src, _ := os.ReadFile(filepath.Join(mods, mod.Path))
		if e := files["lib/modules/"+testRelease+"/"+mod.Path]; !bytes.Equal(e.Data, src) || int64(len(src)) != mod.Size {
			t.Errorf("module %s: %d bytes in the archive, %d in the manifest, want %d", mod.Name, len(e.Data), mod.Size, len(src))
		}
	}
	want := "virtio_ring virtio virtio_pci failover net_failover virtio_net virtio_blk scsi_common scsi_mod virtio_scsi crc32c crc_t10dif sd_mod e1000 e1000e libata libahci ahci isci tg3"
	if strings.Join(names, " ") != want || size != m.ModulesSize {
		t.Errorf("modules %s (%d bytes, manifest %d)\nwant    %s", strings.Join(names, " "), size, m.ModulesSize, want)
	}
	x, err := ParseDepIndex(files["lib/modules/"+testRelease+"/modules.dep"].Data,
		files["lib/modules/"+testRelease+"/modules.alias"].Data, files["lib/modules/"+testRelease+"/modules.softdep"].Data)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Match("virtio:d00000001v00001AF4"); !reflect.DeepEqual(got, []string{"virtio_net"}) {
		t.Errorf("archive's modules.alias matches virtio net to %v", got)
	}
	if e := files["lib/firmware/isci/isci_firmware.bin"]; string(e.Data) != "isci fw" {
		t.Errorf("isci firmware = %q", e.Data)
	}
	if len(m.Firmware) != 1 || m.Firmware[0].Name != "isci/isci_firmware.bin" || m.Firmware[0].Size != 7 ||
		len(m.FirmwareMissing) != 1 || m.FirmwareMissing[0].Name != "tigon/tg3.bin" || m.FirmwareMissing[0].Modules[0] != "tg3" {
		t.Errorf("firmware %+v, missing %+v", m.Firmware, m.FirmwareMissing)
	}
	if _, ok := files["lib/modules/"+testRelease+"/kernel/drivers/unused.ko"]; ok {
		t.Error("a module nobody asked for is in the archive")
	}
	if e := files[dhcpScript]; string(e.Data) != udhcpcScript || e.Mode&0o111 == 0 {
		t.Errorf("udhcpc script missing or not executable")
	}
}

func filepathDir(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

func TestBuildProfiles(t *testing.T) {
	for _, p := range ProfileNames() {
		mods, err := ProfileModules(p)
		if err != nil || len(mods) == 0 {
			t.Errorf("profile %s: %v %v", p, mods, err)
		}
	}
	server, _ := ProfileModules("server")
	for _, m := range []string{"e1000e", "igb", "ixgbe", "i40e", "ice", "mlx5_core", "bnxt_en", "ahci", "nvme",
		"megaraid_sas", "mpt3sas", "virtio_net", "virtio_blk", "virtio_pci"} {
		if !contains(server, m) {
			t.Errorf("server profile lacks %s", m)
		}
	}
	dir := t.TempDir()
	static := filepath.Join(dir, "static")
	writeELF(t, static, false)
	_, err := Build(context.Background(), Options{OutputDir: dir, Anvil: static, Busybox: static, Kernel: static, Profile: "laptop"})
	if err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown profile: %v", err)
	}
	_, err = Build(context.Background(), Options{OutputDir: dir, Anvil: static, Busybox: static, Kernel: static, Modules: []string{"igb"}})
	if err == nil || !strings.Contains(err.Error(), "module tree") {
		t.Errorf("--modules without a module tree: %v", err)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
