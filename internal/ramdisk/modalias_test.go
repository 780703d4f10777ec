package ramdisk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realIndex is depmod's own output for the server profile's staged tree
// (testdata/depmod-6.1.0-57-amd64/README.md).
func realIndex(t *testing.T) *DepIndex {
	t.Helper()
	read := func(n string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "depmod-6.1.0-57-amd64", n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	x, err := ParseDepIndex(read("modules.dep"), read("modules.alias"), read("modules.softdep"))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The matcher resolves real devices' modaliases (as the kernel writes them
// under /sys/bus/*/devices/*/modalias; those of qemu's devices read in a
// guest) against depmod's real modules.alias as modprobe would.
func TestMatchRealAliases(t *testing.T) {
	x := realIndex(t)
	for _, tc := range []struct{ name, modalias, want string }{
		{"virtio-net-pci (qemu)", "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00", "virtio_pci"},
		{"virtio-blk-pci modern (qemu)", "pci:v00001AF4d00001042sv00001AF4sd00001100bc01sc00i00", "virtio_pci"},
		{"virtio net device", "virtio:d00000001v00001AF4", "virtio_net"},
		{"virtio block device", "virtio:d00000002v00001AF4", "virtio_blk"},
		{"virtio scsi device", "virtio:d00000008v00001AF4", "virtio_scsi"},
		{"SCSI disk", "scsi:t-0x00", "sd_mod"},
		{"e1000e 82574L (qemu q35)", "pci:v00008086d000010D3sv00008086sd00000000bc02sc00i00", "e1000e"},
		{"e1000 82540EM (qemu pc)", "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00", "e1000"},
		{"igb I350", "pci:v00008086d00001521sv00008086sd00000001bc02sc00i00", "igb"},
		{"ixgbe 82599 SFP+", "pci:v00008086d000010FBsv00008086sd0000000Cbc02sc00i00", "ixgbe"},
		{"i40e X710 SFP+", "pci:v00008086d00001572sv00008086sd00000001bc02sc00i00", "i40e"},
		{"ice E810-C QSFP", "pci:v00008086d00001592sv00008086sd00000002bc02sc00i00", "ice"},
		{"ConnectX-5", "pci:v000015B3d00001017sv000015B3sd00000007bc02sc00i00", "mlx5_core"},
		{"mlx5 auxiliary eth", "auxiliary:mlx5_core.eth", "mlx5_core"},
		{"BCM57414", "pci:v000014E4d000016D7sv000014E4sd00001402bc02sc00i00", "bnxt_en"},
		{"NVMe by class (qemu nvme)", "pci:v00001B36d00000010sv00001AF4sd00001100bc01sc08i02", "nvme"},
		{"AHCI by class (ICH9)", "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01", "ahci"},
		{"MegaRAID SAS-3 3108", "pci:v00001000d0000005Dsv00001028sd00001F49bc01sc04i00", "megaraid_sas"},
		{"SAS3008 HBA", "pci:v00001000d00000097sv00001000sd000030E0bc01sc07i00", "mpt3sas"},
		{"qemu host bridge", "pci:v00008086d00001237sv00001AF4sd00001100bc06sc00i00", ""},
		{"USB keyboard", "usb:v0627p0001d0000dc00dsc00dp00ic03isc01ip01in00", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(x.Match(tc.modalias), " ")
			if got != tc.want {
				t.Errorf("Match(%s) = %q, want %q", tc.modalias, got, tc.want)
			}
		})
	}
}

// LoadOrder reads depmod's modules.dep: dependencies first, each once.
func TestLoadOrderRealDep(t *testing.T) {
	x := realIndex(t)
	for mod, want := range map[string]string{
		"virtio_net": "virtio_ring virtio failover net_failover virtio_net",
		"nvme":       "crct10dif_common crc_t10dif crc64 crc64_rocksoft t10_pi nvme_core nvme",
		"ahci":       "scsi_common scsi_mod libata libahci ahci",
		"mlx5_core":  "psample pci_hyperv_intf mlxfw mlx5_core",
		"ixgbe":      "dca xfrm_algo libphy mdio_devres mdio ixgbe",
	} {
		if got := strings.Join(x.LoadOrder(mod), " "); got != want {
			t.Errorf("LoadOrder(%s) = %s, want %s", mod, got, want)
		}
	}
	if x.Path("nvme_core") != "kernel/drivers/nvme/host/nvme-core.ko" || x.Path("nvme-core") != x.Path("nvme_core") {
		t.Errorf("Path(nvme_core) = %q", x.Path("nvme_core"))
	}
	if got := x.LoadOrder("nosuch"); len(got) != 0 {
		t.Errorf("LoadOrder of an unknown module = %v", got)
	}
}

func TestParseDepIndexRejects(t *testing.T) {
	for name, f := range map[string][3]string{
		"dep without colon": {"kernel/a.ko\n", "", ""},
		"alias short":       {"", "alias pci:v*\n", ""},
		"alias bad pattern": {"", "alias pci:[ a\n", ""},
		"softdep":           {"", "", "pre: a\n"},
	} {
		if _, err := ParseDepIndex([]byte(f[0]), []byte(f[1]), []byte(f[2])); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// fakeSys is a sysfs with devices under bus/<bus>/devices/<dev>/modalias.
type fakeSys string

func (s fakeSys) add(t *testing.T, bus, dev, modalias string) {
	t.Helper()
	d := filepath.Join(string(s), "bus", bus, "devices", dev)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "modalias"), []byte(modalias+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Coldplug loads what the devices' modaliases call for, dependencies
// first, each module once; a bus driver's new devices (virtio_pci making
// virtio0 and virtio1) are found by the next scan; a module that fails is
// reported and not retried; devices no module drives are left alone.
func TestColdplug(t *testing.T) {
	sys := fakeSys(t.TempDir())
	sys.add(t, "pci", "0000:00:00.0", "pci:v00008086d00001237sv00001AF4sd00001100bc06sc00i00")
	sys.add(t, "pci", "0000:00:02.0", "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00")
	sys.add(t, "pci", "0000:00:03.0", "pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00")
	sys.add(t, "pci", "0000:00:04.0", "pci:v00001B36d00000010sv00001AF4sd00001100bc01sc08i02")
	sys.add(t, "pci", "0000:00:05.0", "pci:v00008086d00001521sv00008086sd00000001bc02sc00i00") // a second igb port below
	sys.add(t, "pci", "0000:00:05.1", "pci:v00008086d00001521sv00008086sd00000001bc02sc00i00")
	var loaded []string
	load := func(_ context.Context, module, rel string) error {
		if rel == "" {
			t.Errorf("load %s without a path", module)
		}
		loaded = append(loaded, module)
		switch module {
		case "virtio_pci": // probing makes the virtio devices
			sys.add(t, "virtio", "virtio0", "virtio:d00000001v00001AF4")
			sys.add(t, "virtio", "virtio1", "virtio:d00000002v00001AF4")
		case "dca":
			return errors.New("finit_module: operation not permitted")
		}
		return nil
	}
	var logs []string
	res, err := Coldplug{SysDir: string(sys), Index: realIndex(t), Load: load, Settle: time.Millisecond,
		Log: func(m string) { logs = append(logs, m) }}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// pci devices in modalias order: virtio-net-pci, virtio-blk-pci, nvme,
	// igb (twice, tried once: its dependency dca fails, so igb is not
	// loaded), then the virtio devices virtio_pci made
	want := "virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci " +
		"crct10dif_common crc_t10dif crc64 crc64_rocksoft t10_pi nvme_core nvme " +
		"dca " +
		"failover net_failover virtio_net virtio_blk"
	if got := strings.Join(loaded, " "); got != want {
		t.Errorf("loaded %s\nwant   %s", got, want)
	}
	if strings.Join(res.Loaded, " ") != strings.Replace(want, "dca ", "", 1) || res.Failed["dca"] == "" ||
		res.Failed["igb"] != "needs dca, which did not load" || len(res.Failed) != 3 {
		t.Errorf("result loaded %v, failed %v", res.Loaded, res.Failed)
	}
	if res.Scans < 3 || res.Scans > 20 {
		t.Errorf("%d scans", res.Scans)
	}
	joined := strings.Join(logs, "\n")
	for _, w := range []string{"modalias virtio:d00000001v00001AF4 -> virtio_net (loaded failover net_failover virtio_net)",
		"modalias virtio:d00000002v00001AF4 -> virtio_blk (loaded virtio_blk)", "loading dca failed",
		"-> igb: not loaded, dca did not load"} {
		if !strings.Contains(joined, w) {
			t.Errorf("log lacks %q:\n%s", w, joined)
		}
	}
}

func TestColdplugNoSysfs(t *testing.T) {
	_, err := Coldplug{SysDir: filepath.Join(t.TempDir(), "nosys"), Index: realIndex(t),
		Load: func(context.Context, string, string) error { return nil }}.Run(context.Background())
	if err == nil {
		t.Error("coldplug without sysfs succeeded")
	}
}

// A machine booted by UEFI gets efivarfs (alias fs-efivarfs, as in
// Debian's modules.alias), one booted by BIOS does not.
func TestColdplugEFIVars(t *testing.T) {
	x, err := ParseDepIndex([]byte("kernel/fs/efivarfs/efivarfs.ko:\n"),
		[]byte("# Aliases extracted from modules themselves.\nalias fs-efivarfs efivarfs\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, uefi := range []bool{true, false} {
		sys := t.TempDir()
		if err := os.MkdirAll(filepath.Join(sys, "bus", "pci", "devices"), 0o755); err != nil {
			t.Fatal(err)
		}
		if uefi {
			if err := os.MkdirAll(filepath.Join(sys, "firmware", "efi"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var loaded []string
		_, err := Coldplug{SysDir: sys, Index: x, Settle: time.Millisecond,
			Load: func(_ context.Context, m, _ string) error { loaded = append(loaded, m); return nil }}.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(loaded) == 1 && loaded[0] == "efivarfs"; got != uefi {
			t.Errorf("uefi %v: loaded %v", uefi, loaded)
		}
	}
}
