package realos_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ramdisk"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testos"
)

// realOSAll, set to 1, runs every case of TestRealOS, not only CI's four.
const realOSAll = "ANVIL_REALOS_ALL"

const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	// realOSDiskMiB is each VM's disk (a sparse file): the partition
	// image's layout needs IPA's 550 MiB EFI system partition in UEFI mode,
	// the root (root_gb 1) and the config drive.
	realOSDiskMiB = 2048
)

// realOSCase is one deploy of a test OS image.
type realOSCase struct {
	image    string // "whole-disk" or "partition"
	firmware string // "bios" (SeaBIOS) or "uefi" (OVMF)
	boot     string // "ipxe" (the NIC's stock iPXE ROM) or "vmedia" (the BMC's virtual CD)
	ci       bool
	// ownGRUB: the partition image has GRUB of its own, which the agent
	// runs in a chroot (else it installs the ramdisk's).
	ownGRUB bool
}

func (c realOSCase) name() string {
	if c.ownGRUB {
		return c.image + "+own-grub/" + c.firmware + "/" + c.boot
	}
	return c.image + "/" + c.firmware + "/" + c.boot
}

// realOSCases is the 2×2×2 matrix, and the partition image with its own
// GRUB. A deploy under TCG takes a minute or two on a small machine, so CI
// runs five cases that cover every value of every axis at least once —
// partition BIOS by iPXE, partition UEFI by iPXE, whole-disk UEFI by
// virtual media, whole-disk BIOS by virtual media, and the image's own
// GRUB (UEFI, virtual media) — and the others run with ANVIL_REALOS_ALL=1.
var realOSCases = []realOSCase{
	{"partition", "bios", "ipxe", true, false},
	{"partition", "uefi", "ipxe", true, false},
	{"whole-disk", "uefi", "vmedia", true, false},
	{"whole-disk", "bios", "vmedia", true, false},
	{"partition", "uefi", "vmedia", true, true},
	{"partition", "bios", "vmedia", false, false},
	{"partition", "uefi", "vmedia", false, false},
	{"whole-disk", "uefi", "ipxe", false, false},
	{"whole-disk", "bios", "ipxe", false, false},
	{"partition", "bios", "ipxe", false, true},
}

// TestRealOS deploys the test OS images (internal/testos) through Anvil as
// a data centre would and boots them from disk: `anvil serve` drives a
// machine of `anvil bmc-emulator --qemu` (a qemu VM under TCG, SeaBIOS or
// OVMF, restricted user networking) through the redfish hardware type and
// the direct deploy; the VM boots the deploy ramdisk (`anvil ramdisk build
// --grub`) from the network through its NIC's stock iPXE ROM, or from the
// ISO its BMC inserts in its virtual CD; the agent writes the image and
// the config drive Anvil builds from the deploy's configdrive, and
// image.install_bootloader sets up the local boot: for the partition image
// GRUB 2 from the ramdisk (i386-pc in the MBR gap, or x86_64-efi on the EFI
// system partition the agent made, plus its NVRAM boot entry) or, for the
// partition image with GRUB of its own, the image's grub-install and
// grub-mkconfig run in a chroot; for the
// whole-disk image in UEFI mode the boot entry of its ESP. Anvil then
// boots the machine from its disk, and the installed system prints the
// config drive's hostname on the serial console, read from the drive as
// cloud-init would. Each case's phases (from the node's states and the
// console) are logged; docs/benchmarks.md has a run's figures.
func TestRealOS(t *testing.T) {
	testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	testbin.Need(t, "mkfs.ext4", "e2fsprogs", vmSwitch)
	testbin.Need(t, stockIPXE, "ipxe-qemu", vmSwitch)
	testbin.Need(t, ovmfCode, "ovmf", vmSwitch)
	testbin.Need(t, ramdisk.GRUBInstall, "grub2-common", vmSwitch)
	testbin.Need(t, "grub-mkstandalone", "grub-common", vmSwitch)
	testbin.Need(t, "/usr/lib/grub/i386-pc/moddep.lst", "grub-pc-bin", vmSwitch)
	testbin.Need(t, "/usr/lib/grub/x86_64-efi/moddep.lst", "grub-efi-amd64-bin", vmSwitch)
	testbin.Need(t, "mkfs.fat", "dosfstools", vmSwitch)
	testbin.Need(t, "mcopy", "mtools", vmSwitch)
	a := testbin.BuildRamdisk(t, anvilBin, []string{vmSwitch}, "--grub", "--profile", "vm")
	imgs := buildTestOS(t)
	imgPort := serveFiles(t, imgs.dir)
	all := os.Getenv(realOSAll) == "1"
	for _, c := range realOSCases {
		t.Run(c.name(), func(t *testing.T) {
			if !c.ci && !all {
				t.Skipf("not one of CI's four cases; %s=1 runs it", realOSAll)
			}
			deployRealOS(t, c, a, imgs, imgPort)
		})
	}
}

// testOSImages are the built images, in one directory served to the VMs.
type testOSImages struct {
	dir                        string
	wholeDisk, wholeDiskSHA256 string // file names in dir
	root, rootSHA256           string
	ownRoot, ownRootSHA256     string // with GRUB of its own
	kernel, ramdisk            string
}

// buildTestOS builds both test OS images with the kernel the deploy
// ramdisk has (Debian's, from the cache).
func buildTestOS(t *testing.T) testOSImages {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := ramdisk.Fetcher{CacheDir: testbin.VMCacheDir(t)}
	k, err := f.Kernel(ctx)
	if err != nil {
		missing(t, "%v", err)
	}
	bb, err := f.Busybox(ctx)
	if err != nil {
		missing(t, "%v", err)
	}
	tree, err := ramdisk.OpenTree(k.ModulesDir)
	if err != nil {
		t.Fatal(err)
	}
	paths := func(names []string) []string {
		mods, err := tree.Resolve(names)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]string{}
		for _, m := range mods {
			byName[m.Name] = m.Path
		}
		out := make([]string, len(names))
		for i, n := range names {
			if out[i] = byName[strings.ReplaceAll(n, "-", "_")]; out[i] == "" {
				t.Fatalf("module %s not in %s", n, k.ModulesDir)
			}
		}
		return out
	}
	dir := t.TempDir()
	img := testOSImages{dir: dir}
	start := time.Now()
	wd, err := testos.BuildWholeDisk(ctx, filepath.Join(dir), testos.Options{Kernel: k.Vmlinuz, Modules: paths(testos.Modules()), Busybox: bb, BIOS: true})
	if err != nil {
		t.Fatal(err)
	}
	img.wholeDisk = filepath.Base(wd.Path)
	pdir := filepath.Join(dir, "partition")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := testos.BuildPartition(ctx, pdir, testos.Options{Kernel: k.Vmlinuz, Modules: paths(testos.PartitionModules()), Busybox: bb}, 48)
	if err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{p.Root: "root.img", p.Kernel: "vmlinuz", p.Ramdisk: "initrd"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	odir := filepath.Join(dir, "own-grub")
	if err := os.Mkdir(odir, 0o755); err != nil {
		t.Fatal(err)
	}
	op, err := testos.BuildPartition(ctx, odir, testos.Options{Kernel: k.Vmlinuz, Modules: paths(testos.PartitionModules()), Busybox: bb,
		OwnGRUB: true}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(op.Root, filepath.Join(dir, "root-own-grub.img")); err != nil {
		t.Fatal(err)
	}
	img.root, img.ownRoot, img.kernel, img.ramdisk = "root.img", "root-own-grub.img", "vmlinuz", "initrd"
	img.wholeDiskSHA256, img.rootSHA256 = fileSHA256(t, filepath.Join(dir, img.wholeDisk)), fileSHA256(t, filepath.Join(dir, img.root))
	img.ownRootSHA256 = fileSHA256(t, filepath.Join(dir, img.ownRoot))
	t.Logf("test OS images built in %v: %s (whole disk), %s (partition, %s kernel)", time.Since(start).Round(time.Millisecond),
		img.wholeDisk, img.root, k.Package)
	return img
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// serveFiles serves dir on a free loopback port and returns the port.
func serveFiles(t *testing.T, dir string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// deployRealOS runs one case: an emulator with one qemu machine, anvil
// serve, enrol, deploy with a config drive, boot from disk.
func deployRealOS(t *testing.T, c realOSCase, a testbin.Ramdisk, imgs testOSImages, imgPort int) {
	dir := t.TempDir()
	if strings.ContainsAny(dir, " ,'") {
		t.Skipf("temp dir %q holds a space, comma or quote", dir)
	}
	apiPort := testbin.FreePort(t)
	guestAPI := fmt.Sprintf("http://10.0.2.100:%d", apiPort)
	// Network boot: iPXE in the guest fetches the boot endpoint. Virtual
	// media: the BMC on this host downloads the ISO; the agent in it still
	// reaches the API as the guest sees it (--public-endpoint).
	httpURL := guestAPI + "/boot"
	if c.boot == "vmedia" {
		httpURL = fmt.Sprintf("http://127.0.0.1:%d/boot", apiPort)
	}
	api := startServeOn(t, apiPort, "--sync-power-state-interval", "3600", "--log-level", "debug", "--automated-clean=false",
		"--http-url", httpURL, "--public-endpoint", guestAPI, "--http-root", filepath.Join(dir, "http-root"),
		"--file-url-allowed-paths", filepath.Dir(a.Kernel))

	emuState := filepath.Join(dir, "emulator")
	bmcAddr := testbin.FreeAddr(t)
	args := []string{"bmc-emulator", "--qemu", "--count", "1", "--listen", bmcAddr, "--password", password,
		"--state-dir", emuState, "--vm-memory", "512", "--vm-disk-mib", fmt.Sprint(realOSDiskMiB), "--log-level", "info",
		"--uefi-firmware", ovmfCode, "--guest-port", fmt.Sprint(agentPort),
		"--forward", fmt.Sprintf("10.0.2.100:%d=127.0.0.1:%d", apiPort, apiPort),
		"--forward", fmt.Sprintf("10.0.2.101:80=127.0.0.1:%d", imgPort)}
	if c.boot == "ipxe" {
		args = append(args, "--boot-file", guestAPI+"/boot/boot.ipxe")
	} else {
		args = append(args, "--no-network-boot")
	}
	emu := testbin.Start(t, "bmc-emulator", anvilBin, args...)
	bmc := "http://" + bmcAddr
	var m map[string]any
	if !waitFor(context.Background(), 30*time.Second, func() bool {
		var err error
		m, err = emuMachine(bmc, "node-01")
		return err == nil
	}) {
		t.Fatalf("the emulator did not answer:\n%s", emu.Logs.String())
	}
	console := filepath.Join(emuState, "node-01", "console.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node-01 console:\n%s", readTail(console, 12000))
			t.Logf("node-01 qemu log:\n%s", readTail(filepath.Join(emuState, "node-01", "qemu.log"), 2000))
		}
	})
	mac := m["macs"].([]any)[0].(string)
	fwd := int(m["forwarded_port"].(float64))

	bootIface := "ipxe"
	if c.boot == "vmedia" {
		bootIface = "redfish-virtual-media"
	}
	hostname := "realos-" + strings.NewReplacer("/", "-", "whole-disk", "wd", "partition", "part", "+own-grub", "-own").Replace(c.name())
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "realos", "driver": "redfish",
		"boot_interface": bootIface, "deploy_interface": "direct",
		"properties": map[string]any{"capabilities": "boot_mode:" + c.firmware},
		"driver_info": map[string]any{
			"redfish_address": bmc, "redfish_system_id": "/redfish/v1/Systems/node-01",
			"redfish_username": "admin", "redfish_password": password,
			"deploy_kernel": a.Kernel, "deploy_ramdisk": a.Initramfs,
			"kernel_append_params": fmt.Sprintf("console=ttyS0 ipa-advertise-host=127.0.0.1 ipa-advertise-port=%d anvil.min-disk-size=512MiB", fwd),
		}}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": mac})
	provision(t, api, node, "manage")
	testbin.WaitState(t, api, node, "manageable", time.Minute)
	provision(t, api, node, "provide")
	testbin.WaitState(t, api, node, "available", time.Minute)

	src := "http://10.0.2.101/"
	patch := []map[string]any{}
	if c.image == "partition" {
		root, sum := imgs.root, imgs.rootSHA256
		if c.ownGRUB {
			root, sum = imgs.ownRoot, imgs.ownRootSHA256
		}
		patch = append(patch,
			map[string]any{"op": "add", "path": "/instance_info/image_source", "value": src + root},
			map[string]any{"op": "add", "path": "/instance_info/image_checksum", "value": sum},
			map[string]any{"op": "add", "path": "/instance_info/image_type", "value": "partition"},
			map[string]any{"op": "add", "path": "/instance_info/kernel", "value": src + imgs.kernel},
			map[string]any{"op": "add", "path": "/instance_info/ramdisk", "value": src + imgs.ramdisk},
			map[string]any{"op": "add", "path": "/instance_info/root_gb", "value": "1"})
	} else {
		patch = append(patch,
			map[string]any{"op": "add", "path": "/instance_info/image_source", "value": src + imgs.wholeDisk},
			map[string]any{"op": "add", "path": "/instance_info/image_checksum", "value": imgs.wholeDiskSHA256})
	}
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, patch)

	start := time.Now()
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active",
		"configdrive": map[string]any{"meta_data": map[string]any{"hostname": hostname, "name": hostname}}})
	active := waitActive(t, api, node, 15*time.Minute)
	want := testos.HostnameLine + hostname
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var seen time.Time
	if !waitFor(ctx, 5*time.Minute, func() bool {
		lb := lastBootOf(console)
		if strings.Contains(lb, want) {
			seen = time.Now()
			return true
		}
		return false
	}) {
		t.Fatalf("no %q on the console of the VM's last boot:\n%s", want, tail(lastBootOf(console), 6000))
	}
	ph := deployPhases(console, start, active, seen)
	lb := lastBootOf(console)
	if !strings.Contains(lb, "boot device disk") || strings.Contains(lb, "anvil-ramdisk") {
		t.Errorf("the last boot was not from the disk alone:\n%s", tail(lb, 3000))
	}
	if !strings.Contains(lb, ", firmware "+c.firmware+" ===") {
		t.Errorf("the last boot's firmware is not %s: %s", c.firmware, strings.SplitN(strings.TrimLeft(lb, "\n"), "\n", 2)[0])
	}
	if c.image == "partition" && !strings.Contains(lb, "(partition image, root "+testos.RootLabel+")") {
		t.Errorf("the disk boot did not run the partition image's system:\n%s", tail(lb, 3000))
	}
	if c.image == "partition" {
		want := "install_bootloader: the image has no GRUB 2; installing the ramdisk's"
		if c.ownGRUB {
			want = "install_bootloader: installing the image's own GRUB 2 in a chroot"
		}
		if b, _ := os.ReadFile(console); !strings.Contains(string(b), want) {
			t.Errorf("the agent did not log %q", want)
		}
	}
	if c.firmware == "uefi" && !strings.Contains(lb, `"ironic1"`) {
		t.Errorf("OVMF did not boot the agent's NVRAM entry ironic1:\n%s", tail(lb, 3000))
	}
	t.Logf("%s: deployed and booted from disk, %q on the console; phases:\n%s", c.name(), want, ph)
}

// emuMachine is the emulator's view of one machine.
func emuMachine(bmc, id string) (map[string]any, error) {
	resp, err := http.Get(bmc + "/emulator/machines/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET machine: %s", resp.Status)
	}
	var m map[string]any
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// lastBootOf is the console since the emulator's last power-on line.
func lastBootOf(console string) string {
	b, _ := os.ReadFile(console)
	s := string(b)
	if i := strings.LastIndex(s, "\n=== "); i >= 0 {
		return s[i+1:]
	}
	return s
}

// phases are the moments of one deploy, in order.
type phases struct {
	start time.Time
	names []string
	at    []time.Time
}

func (p *phases) add(name string, at time.Time) {
	p.names, p.at = append(p.names, name), append(p.at, at)
}

func (p *phases) String() string {
	var b strings.Builder
	prev := p.start
	for i, n := range p.names {
		fmt.Fprintf(&b, "  %-46s %7.1fs  (+%5.1fs)\n", n, p.at[i].Sub(p.start).Seconds(), p.at[i].Sub(prev).Seconds())
		prev = p.at[i]
	}
	return b.String()
}

// consoleEvent matches the emulator's power-on marks and the agent's log
// lines (the guest's clock is the host's, through the emulated RTC).
var consoleEvent = regexp.MustCompile(`(?m)^=== (\S+) power on, boot device (\S+),|time=(\S+) level=\w+ msg="?(agent started|node found|command started|command succeeded)"? ?(?:command=(\S+))?`)

// deployPhases reads the deploy's phases from the console since start:
// power-on into the ramdisk, the agent running, the node found (lookup),
// each agent command, the power-on from disk; then active and the first
// line of the installed system, as the test saw them.
func deployPhases(console string, start, active, firstLine time.Time) *phases {
	p := &phases{start: start}
	b, _ := os.ReadFile(console)
	names := map[string]string{"agent started": "ramdisk booted: agent started", "node found": "lookup: node found"}
	for _, m := range consoleEvent.FindAllStringSubmatch(string(b), -1) {
		ts, name := m[1], "power on, boot device "+m[2]
		if m[1] == "" {
			ts, name = m[3], names[m[4]]
			if m[5] != "" {
				name = m[5] + map[string]string{"command started": " started", "command succeeded": " done"}[m[4]]
			}
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(start) {
			continue
		}
		p.add(name, at)
	}
	p.add("active (seen by the test)", active)
	p.add("first line from disk (seen by the test)", firstLine)
	return p
}

// waitActive polls the node until it is active and returns when it saw
// that; a failed deploy fails the test with its error.
func waitActive(t *testing.T, api, node string, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		n := testbin.GetNode(t, api, node)
		ps, _ := n["provision_state"].(string)
		if ps == "active" && n["reservation"] == nil {
			if n["last_error"] != nil {
				t.Errorf("active with last_error %v", n["last_error"])
			}
			return time.Now()
		}
		if strings.HasSuffix(ps, "failed") {
			t.Fatalf("deploy failed: %v", n["last_error"])
		}
		if time.Now().After(deadline) {
			t.Fatalf("not active after %v: %s, last_error %v", limit, ps, n["last_error"])
		}
		time.Sleep(250 * time.Millisecond)
	}
}
