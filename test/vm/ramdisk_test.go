package vm_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ramdisk"
	"github.com/anvil-metal/anvil/internal/testbin"
)

// serverModules are the drivers the issue asks the ramdisk to carry for
// physical servers, plus virtio.
var serverModules = []string{"e1000e", "igb", "ixgbe", "i40e", "ice", "mlx5_core", "bnxt_en", "ahci", "nvme",
	"megaraid_sas", "mpt3sas", "virtio_pci", "virtio_net", "virtio_blk", "virtio_scsi", "sd_mod"}

// TestRamdiskModaliasBoot builds the ramdisk as an operator does (`anvil
// ramdisk build`, Debian's kernel), reads its cpio: the server NIC and
// storage modules with their dependencies, the modules.dep and
// modules.alias depmod itself writes for that tree, a /init naming no
// module; the manifest agrees with the archive. It then boots it in qemu
// (TCG) with a virtio disk and two virtio NICs, one without a link: the
// console shows the drivers loaded by modalias, the NIC with a link up with a
// lease, the other left alone, the disk present, and the agent, which finds
// no node, saying so with its MACs and API URL at the default log level.
func TestRamdiskModaliasBoot(t *testing.T) {
	qemu := testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86", vmSwitch)
	a := buildRamdisk(t)
	dir, st := vmStateDir(t)

	var m ramdisk.Manifest
	b, err := os.ReadFile(filepath.Join(filepath.Dir(a.initramfs), "ramdisk.json"))
	if err != nil {
		t.Fatalf("no ramdisk.json beside the initramfs: %v", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	z, err := os.ReadFile(a.initramfs)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(z); m.Initramfs.SHA256 != hex.EncodeToString(sum[:]) || m.Initramfs.Size != int64(len(z)) {
		t.Errorf("manifest initramfs %+v, file %d bytes", m.Initramfs, len(z))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ramdisk.ReadNewc(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		files[e.Name] = e.Data
	}
	modDir := "lib/modules/" + m.KernelVersion + "/"
	if m.KernelVersion == "" || files[modDir+"modules.dep"] == nil || files[modDir+"modules.alias"] == nil {
		t.Fatalf("no %smodules.dep/modules.alias in the initramfs (kernel_version %q)", modDir, m.KernelVersion)
	}
	inArchive := map[string]bool{}
	for name := range files {
		if rest, ok := strings.CutPrefix(name, modDir); ok && strings.HasSuffix(rest, ".ko") {
			inArchive[ramdisk.CanonicalName(strings.TrimSuffix(path.Base(rest), ".ko"))] = true
		}
	}
	for _, mod := range serverModules {
		if !inArchive[mod] {
			t.Errorf("module %s is not in the initramfs", mod)
		}
	}
	var inManifest []string
	for _, mod := range m.Modules {
		inManifest = append(inManifest, mod.Name)
		if int64(len(files[modDir+mod.Path])) != mod.Size || mod.Size == 0 {
			t.Errorf("module %s: manifest says %d bytes, archive holds %d", mod.Name, mod.Size, len(files[modDir+mod.Path]))
		}
	}
	if len(inManifest) != len(inArchive) {
		t.Errorf("manifest lists %d modules, the archive holds %d", len(inManifest), len(inArchive))
	}
	if init := string(files["init"]); !strings.Contains(init, "anvil ramdisk coldplug") || strings.Contains(init, "virtio_net") || strings.Contains(init, "insmod") {
		t.Errorf("/init does not leave the module choice to modalias:\n%s", init)
	}
	checkAgainstDepmod(t, dir, entries, m.KernelVersion)
	t.Logf("initramfs: %d bytes (%d uncompressed), %d modules (%d bytes), kernel %d bytes; firmware %d included, %d missing",
		m.Initramfs.Size, m.Uncompressed, len(m.Modules), m.ModulesSize, m.Kernel.Size, len(m.Firmware), len(m.FirmwareMissing))

	// Boot: a virtio disk and two virtio NICs (user networking, restrict=on:
	// the guest reaches only the forwarded API), the second with its link
	// down (set through the monitor before the guest starts). The API
	// answers every lookup 404, as Ironic does for unknown MACs.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node could not be found.\", \"debuginfo\": null}"}`))
	}))
	t.Cleanup(api.Close)
	apiPort := api.URL[strings.LastIndex(api.URL, ":")+1:]
	disk := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 64*mib); err != nil {
		t.Fatal(err)
	}
	console := filepath.Join(st, "console.log")
	monitor := filepath.Join(st, "monitor.sock")
	const mac2 = "52:54:00:a4:71:02"
	cmd := exec.Command(qemu, "-accel", "tcg", "-m", "512", "-smp", "1",
		"-kernel", a.kernel, "-initrd", a.initramfs, "-append", "console=ttyS0 panic=-1 ipa-api-url=http://10.0.2.100:80",
		"-display", "none", "-serial", "file:"+console, "-monitor", "unix:"+monitor+",server=on,wait=off", "-S",
		"-drive", "file="+disk+",format=raw,if=virtio",
		"-netdev", "user,id=n1,restrict=on,guestfwd=tcp:10.0.2.100:80-cmd:"+a.busybox+" nc 127.0.0.1 "+apiPort,
		"-device", "virtio-net-pci,netdev=n1,mac="+vmMAC,
		"-netdev", "user,id=n2,restrict=on", "-device", "virtio-net-pci,netdev=n2,mac="+mac2,
		"-no-reboot")
	var qlog syncBuffer
	cmd.Stdout, cmd.Stderr = &qlog, &qlog
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("qemu: %s", qlog.String())
		}
	})
	hmp(t, monitor, "set_link n2 off", "cont")
	var log string
	deadline := time.Now().Add(4 * time.Minute)
	for !strings.Contains(log, `msg="lookup failed; retrying"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed lookup on the console after 4 minutes:\n%s", tail(log, 6000))
		}
		time.Sleep(500 * time.Millisecond) // polling the VM's console file
		b, _ := os.ReadFile(console)
		log = string(b)
	}
	wall := time.Since(start)
	if !strings.Contains(log, "anvil-ramdisk: starting anvil agent") {
		t.Fatalf("console:\n%s", tail(log, 6000))
	}
	agentAt := regexp.MustCompile(`anvil-ramdisk: starting anvil agent`).FindStringIndex(log)[0]
	for _, re := range []string{
		`anvil-ramdisk: coldplug: modalias pci:v00001AF4d00001000\S* -> virtio_pci \(loaded [^)]*virtio_pci\)`,
		`anvil-ramdisk: coldplug: modalias virtio:d00000001v00001AF4 -> virtio_net \(loaded failover net_failover virtio_net\)`,
		`anvil-ramdisk: coldplug: modalias virtio:d00000002v00001AF4 -> virtio_blk \(loaded virtio_blk\)`,
		`anvil-ramdisk: coldplug: \d+ modules loaded, 0 failed`,
		`anvil-ramdisk: eth0 \(` + vmMAC + `\): link up, DHCP`,
		`anvil-ramdisk: eth0 bound 10\.0\.2\.15/`,
		`anvil-ramdisk: eth1 \(` + mac2 + `\): no link, not configured`,
		`anvil-ramdisk: disks: vda `,
		// the agent says why it finds no node, at the default level
		`level=WARN msg="lookup failed; retrying" reason="HTTP 404: no node has a port with these MACs[^"]*Node could not be found\." ` +
			`macs=` + vmMAC + `,` + mac2 + ` api_url=http://10\.0\.2\.100:80 attempt=1 retry_in=`,
	} {
		if !regexp.MustCompile(re).MatchString(log) {
			t.Errorf("console lacks %s", re)
		}
	}
	up := regexp.MustCompile(`anvil-ramdisk: starting anvil agent \(uptime ([0-9.]+)s\)`).FindStringSubmatch(log)
	cp := regexp.MustCompile(`coldplug: (\d+) modules loaded, \d+ failed, \d+ scans, (\S+)`).FindStringSubmatch(log)
	if t.Failed() || up == nil || cp == nil {
		t.Fatalf("console:\n%s", tail(log, 6000))
	}
	if strings.Contains(log[agentAt:], "modalias") {
		t.Error("modules loaded after the agent started")
	}
	t.Logf("boot (qemu TCG, 1 vCPU, 512 MiB): first lookup answered %v after qemu started, guest uptime %ss; coldplug loaded %s modules in %s",
		wall.Round(100*time.Millisecond), up[1], cp[1], cp[2])
}

// checkAgainstDepmod unpacks the archive's module tree and runs kmod's
// depmod on it: the modules.alias the build wrote must match depmod's line
// for line, and modules.dep must give every module the same dependencies.
func checkAgainstDepmod(t *testing.T, dir string, entries []ramdisk.Entry, release string) {
	t.Helper()
	depmod, err := exec.LookPath("depmod")
	if err != nil {
		if depmod, err = exec.LookPath("/usr/sbin/depmod"); err != nil {
			missing(t, "depmod not found (Debian package kmod)")
			return
		}
	}
	root := filepath.Join(dir, "depmod")
	modDir := "lib/modules/" + release + "/"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, modDir) || !strings.HasSuffix(e.Name, ".ko") {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(e.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, e.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(depmod, "-b", root, release).CombinedOutput(); err != nil {
		t.Fatalf("depmod: %v: %s", err, out)
	}
	ours := map[string][]byte{}
	for _, e := range entries {
		ours[e.Name] = e.Data
	}
	theirs := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(root, "lib", "modules", release, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lines := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
		sort.Strings(out)
		return out
	}
	if a, d := lines(ours[modDir+"modules.alias"]), lines(theirs("modules.alias")); strings.Join(a, "\n") != strings.Join(d, "\n") {
		t.Errorf("modules.alias: ours %d lines, depmod's %d; they differ", len(a), len(d))
	}
	deps := func(b []byte) map[string]string {
		out := map[string]string{}
		for _, l := range lines(b) {
			mod, rest, _ := strings.Cut(l, ":")
			f := strings.Fields(rest)
			sort.Strings(f)
			out[mod] = strings.Join(f, " ")
		}
		return out
	}
	o, d := deps(ours[modDir+"modules.dep"]), deps(theirs("modules.dep"))
	if len(o) != len(d) {
		t.Errorf("modules.dep: ours %d modules, depmod's %d", len(o), len(d))
	}
	for mod, want := range d {
		if o[mod] != want {
			t.Errorf("modules.dep %s: ours %q, depmod's %q", mod, o[mod], want)
		}
	}
}

// BenchmarkRamdiskBuild is `anvil ramdisk build` in-process with a warm
// cache (Debian's kernel, firmware-linux-free and busybox already fetched;
// the first build, outside the timer, fetches them): the time to resolve,
// stage and compress, and the sizes it makes, per profile.
//
//	go test -run '^$' -bench RamdiskBuild -benchtime 3x ./test/vm/
func BenchmarkRamdiskBuild(b *testing.B) {
	for _, profile := range []string{"vm", "server"} {
		b.Run(profile, func(b *testing.B) {
			cache := filepath.Join(os.Getenv("HOME"), ".cache", "anvil-vm-test")
			if c, err := os.UserCacheDir(); err == nil {
				cache = filepath.Join(c, "anvil-vm-test")
			}
			o := ramdisk.Options{OutputDir: b.TempDir(), Anvil: anvilBin, Profile: profile, CacheDir: cache}
			r, err := ramdisk.Build(b.Context(), o)
			if err != nil {
				b.Skipf("ramdisk build (needs apt-get download): %v", err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r, err = ramdisk.Build(b.Context(), o); err != nil {
					b.Fatal(err)
				}
			}
			m := r.Manifest
			b.ReportMetric(float64(m.Initramfs.Size), "initramfs-bytes")
			b.ReportMetric(float64(m.Uncompressed), "uncompressed-bytes")
			b.ReportMetric(float64(m.ModulesSize), "module-bytes")
			b.ReportMetric(float64(len(m.Modules)), "modules")
			b.ReportMetric(float64(m.TotalSize), "kernel+initramfs-bytes")
		})
	}
}

// hmp sends commands to qemu's human monitor on the unix socket at path
// (qemu creates it at start: dialled until it is there, at most 30 s) and
// waits for the prompt after the last one.
func hmp(t *testing.T, path string, cmds ...string) {
	t.Helper()
	var c net.Conn
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if c, err = net.Dial("unix", path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("qemu monitor: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // qemu is starting
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var got strings.Builder
	buf := make([]byte, 4096)
	readPrompt := func() {
		for n := strings.Count(got.String(), "(qemu) ") + 1; strings.Count(got.String(), "(qemu) ") < n; {
			k, err := c.Read(buf)
			got.Write(buf[:k])
			if err != nil {
				t.Fatalf("qemu monitor: %v after %q", err, got.String())
			}
		}
	}
	readPrompt()
	for _, cmd := range cmds {
		if _, err := c.Write([]byte(cmd + "\n")); err != nil {
			t.Fatal(err)
		}
		readPrompt()
	}
	if strings.Contains(got.String(), "rror") {
		t.Fatalf("qemu monitor: %q", got.String())
	}
}
