package agent

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadCmdlineFixtures(t *testing.T) {
	c, err := ReadCmdline("testdata/cmdline-ipxe.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := Cmdline{APIURL: "http://10.0.2.100:6385", BootMAC: "52:54:00:a4:71:01", AdvertiseHost: "127.0.0.1",
		AdvertisePort: 40222, Insecure: true, MinDiskSize: 32 << 20, HeartbeatInterval: time.Second}
	c.Params = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("ipxe cmdline:\n got %+v\nwant %+v", c, want)
	}

	c, err = ReadCmdline("testdata/cmdline-pxelinux.txt")
	if err == nil || !strings.Contains(err.Error(), "ipa-listen-port=99999") {
		t.Errorf("malformed port: err %v", err)
	}
	if c.APIURL != "https://192.0.2.10:6385" || c.BootMAC != "52:54:00:a4:71:01" || !c.Debug ||
		c.ListenPort != 0 || c.AdvertiseProtocol != "https" {
		t.Errorf("pxelinux cmdline: %+v", c)
	}
	if _, ok := c.Params["quiet"]; ok {
		t.Error("a word without = became a parameter")
	}
	if c.Params["BOOT_IMAGE"] != "/vmlinuz" {
		t.Errorf("params %v", c.Params)
	}

	c, err = ReadCmdline(filepath.Join(t.TempDir(), "absent"))
	if err != nil || c.APIURL != "" || c.Params == nil {
		t.Errorf("missing file: %+v, %v", c, err)
	}
}

func TestParseCmdline(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		check      func(Cmdline) bool
		bad        string // part of the error, "" for none
	}{
		{"empty", "", func(c Cmdline) bool { return c.APIURL == "" && !c.ramdisk() }, ""},
		{"later key wins", "ipa-api-url=http://a:1 ipa-api-url=http://b:2", func(c Cmdline) bool { return c.APIURL == "http://b:2" }, ""},
		{"bare ipa-insecure", "ipa-insecure", func(c Cmdline) bool { return c.Insecure }, ""},
		{"ipa-insecure=0", "ipa-insecure=0", func(c Cmdline) bool { return !c.Insecure }, ""},
		{"ipa-insecure=maybe", "ipa-insecure=maybe", func(c Cmdline) bool { return !c.Insecure }, "ipa-insecure"},
		{"BOOTIF pxelinux", "BOOTIF=01-AA-bb-cc-dd-ee-ff", func(c Cmdline) bool { return c.BootMAC == "aa:bb:cc:dd:ee:ff" }, ""},
		{"BOOTIF colons", "BOOTIF=aa:bb:cc:dd:ee:0f", func(c Cmdline) bool { return c.BootMAC == "aa:bb:cc:dd:ee:0f" }, ""},
		{"BOOTIF junk", "BOOTIF=01-zz", func(c Cmdline) bool { return c.BootMAC == "" }, "BOOTIF"},
		{"API URL not http", "ipa-api-url=mdns", func(c Cmdline) bool { return c.APIURL == "" }, "ipa-api-url"},
		{"port 0", "ipa-advertise-port=0", func(c Cmdline) bool { return c.AdvertisePort == 0 }, "ipa-advertise-port"},
		{"protocol", "ipa-advertise-protocol=ftp", func(c Cmdline) bool { return c.AdvertiseProtocol == "" }, "ipa-advertise-protocol"},
		{"size bytes", "anvil.min-disk-size=1048576", func(c Cmdline) bool { return c.MinDiskSize == 1<<20 }, ""},
		{"size G", "anvil.min-disk-size=2G", func(c Cmdline) bool { return c.MinDiskSize == 2<<30 }, ""},
		{"size junk", "anvil.min-disk-size=lots", func(c Cmdline) bool { return c.MinDiskSize == 0 }, "anvil.min-disk-size"},
		{"heartbeat seconds", "anvil.heartbeat-interval=2.5", func(c Cmdline) bool { return c.HeartbeatInterval == 2500*time.Millisecond }, ""},
		{"pregenerated token", "ipa-agent-token=0123456789abcdef0123456789abcdef", func(c Cmdline) bool { return c.AgentToken == "0123456789abcdef0123456789abcdef" }, ""},
		{"heartbeat negative", "anvil.heartbeat-interval=-1s", func(c Cmdline) bool { return c.HeartbeatInterval == 0 }, "anvil.heartbeat-interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCmdline(tc.line)
			if (err != nil) != (tc.bad != "") || err != nil && !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("err = %v, want one naming %q", err, tc.bad)
			}
			if !tc.check(c) {
				t.Errorf("parsed %+v", c)
			}
		})
	}
}

// fakeSys lays out /sys/block and /sys/class/net under a temporary root.
func fakeSys(t *testing.T, disks map[string][2]string, nics map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, v := range disks { // size in sectors, removable
		d := filepath.Join(root, "sys/block", name)
		_ = os.MkdirAll(d, 0o755)
		_ = os.WriteFile(filepath.Join(d, "size"), []byte(v[0]+"\n"), 0o644)
		_ = os.WriteFile(filepath.Join(d, "removable"), []byte(v[1]+"\n"), 0o644)
	}
	for name, mac := range nics {
		d := filepath.Join(root, "sys/class/net", name)
		_ = os.MkdirAll(d, 0o755)
		_ = os.WriteFile(filepath.Join(d, "address"), []byte(mac+"\n"), 0o644)
	}
	return root
}

func TestInstallDisk(t *testing.T) {
	const gib = 1 << 30 / 512 // sectors
	sectors := func(n int64) string { return strconv.FormatInt(n, 10) }
	root := fakeSys(t, map[string][2]string{
		"sda":     {sectors(8 * gib), "0"},
		"sdb":     {sectors(5 * gib), "0"},
		"nvme0n1": {sectors(5 * gib), "0"},  // same size as sdb: the name decides
		"sdc":     {sectors(16 * gib), "1"}, // removable
		"vda":     {sectors(128 << 11), "0"},
		"sr0":     {sectors(6 * gib), "0"},
		"loop0":   {sectors(6 * gib), "0"},
		"dm-0":    {sectors(6 * gib), "0"},
		"vdb":     {"0", "0"},
	}, nil)
	for _, tc := range []struct {
		min  int64
		want string
	}{
		{DefaultMinDiskSize, "/dev/nvme0n1"},
		{6 << 30, "/dev/sda"},
		{64 << 20, "/dev/vda"},
		{1, "/dev/vda"},
		{17 << 30, ""},
	} {
		got, err := InstallDisk(root, tc.min)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("InstallDisk(min %d) = %q, %v; want %q", tc.min, got, err, tc.want)
		}
	}
}

func TestCmdlineApply(t *testing.T) {
	root := fakeSys(t, map[string][2]string{"vda": {"131072", "0"}, "vdb": {"262144", "0"}},
		map[string]string{"eth0": "52:54:00:00:00:02", "eth1": "52:54:00:a4:71:01", "lo": "00:00:00:00:00:00"})
	none := func(string) bool { return false }

	// A ramdisk command line and no flags: everything from the kernel.
	c, _ := ParseCmdline("ipa-api-url=http://127.0.0.1:6385 BOOTIF=01-52-54-00-a4-71-01 ipa-advertise-host=127.0.0.1 " +
		"ipa-advertise-port=40222 anvil.min-disk-size=100MiB anvil.heartbeat-interval=1s")
	cfg := Config{APIURL: "http://127.0.0.1:6385", Listen: "127.0.0.1:9999", RootDir: root}
	if err := c.Apply(context.Background(), &cfg, none); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":9999" || cfg.AdvertiseURL != "http://127.0.0.1:40222" || cfg.Disk != "/dev/vdb" ||
		cfg.HeartbeatInterval != time.Second || !reflect.DeepEqual(cfg.MACs, []string{"52:54:00:a4:71:01", "52:54:00:00:00:02"}) {
		t.Errorf("from the kernel: %+v", cfg)
	}

	// Flags win.
	set := map[string]bool{"api-url": true, "mac": true, "listen": true, "advertise-url": true, "disk": true, "heartbeat-interval": true}
	cfg = Config{APIURL: "http://127.0.0.2:1", MACs: []string{"aa:aa:aa:aa:aa:aa"}, Listen: "127.0.0.1:7",
		AdvertiseURL: "http://x:7", Disk: "/tmp/disk", HeartbeatInterval: 3 * time.Second, RootDir: root}
	before := cfg
	if err := c.Apply(context.Background(), &cfg, func(f string) bool { return set[f] }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, before) {
		t.Errorf("flags overridden:\n got %+v\nwant %+v", cfg, before)
	}

	// No advertise host: the address that routes to the API; IPA's port.
	c, _ = ParseCmdline("ipa-api-url=http://127.0.0.1:6385 ipa-listen-port=9998 anvil.min-disk-size=1")
	cfg = Config{RootDir: root}
	if err := c.Apply(context.Background(), &cfg, none); err != nil {
		t.Fatal(err)
	}
	if cfg.AdvertiseURL != "http://127.0.0.1:9999" || cfg.Listen != ":9998" || cfg.Disk != "/dev/vda" {
		t.Errorf("routable address: %+v", cfg)
	}

	// No kernel settings (a developer's machine): the flag defaults stay.
	c, _ = ParseCmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1")
	cfg = Config{APIURL: "http://127.0.0.1:6385", Listen: "127.0.0.1:9999", RootDir: root}
	if err := c.Apply(context.Background(), &cfg, func(f string) bool { return f == "disk" }); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9999" || cfg.AdvertiseURL != "" || cfg.MACs != nil {
		t.Errorf("no kernel settings: %+v", cfg)
	}
}
