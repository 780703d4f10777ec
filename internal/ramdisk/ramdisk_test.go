package ramdisk

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// readNewc parses a newc archive strictly (magic, hex fields, 4-byte
// alignment, trailer last) into its entries.
func readNewc(t *testing.T, b []byte) []Entry {
	t.Helper()
	var out []Entry
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	for {
		if off+110 > len(b) {
			t.Fatalf("truncated header at %d", off)
		}
		h := string(b[off : off+110])
		if h[:6] != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("field %d of header at %d: %v", i, off, err)
			}
			return uint32(v)
		}
		mode, size, rmaj, rmin, namesize := field(1), field(6), field(9), field(10), field(11)
		off += 110
		name := string(b[off : off+int(namesize)-1])
		if b[off+int(namesize)-1] != 0 {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		off += int(namesize)
		align()
		data := b[off : off+int(size)]
		off += int(size)
		align()
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		e := Entry{Name: name, Mode: mode, DevMajor: rmaj, DevMinor: rmin}
		if mode&typeMask == TypeSymlink {
			e.Link = string(data)
		} else {
			e.Data = data
		}
		out = append(out, e)
	}
}

func TestWriteNewcRoundTrip(t *testing.T) {
	in := []Entry{
		{Name: "bin", Mode: TypeDir | 0o755},
		{Name: "dev/console", Mode: TypeCharDev | 0o600, DevMajor: 5, DevMinor: 1},
		{Name: "bin/sh", Mode: TypeSymlink | 0o777, Link: "busybox"},
		{Name: "a", Mode: TypeRegular | 0o644, Data: []byte("x")},
		{Name: "bin/longer-name", Mode: TypeRegular | 0o755, Data: []byte("12345")},
		{Name: "empty", Mode: TypeRegular | 0o600},
	}
	var buf bytes.Buffer
	if err := WriteNewc(&buf, in); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive is %d bytes, not 4-aligned", buf.Len())
	}
	got := readNewc(t, buf.Bytes())
	if again, err := ReadNewc(bytes.NewReader(buf.Bytes())); err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("ReadNewc = %+v, %v; want %+v", again, err, got)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d entries, want %d", len(got), len(in))
	}
	for i := range in {
		w, g := in[i], got[i]
		if g.Name != w.Name || g.Mode != w.Mode || g.Link != w.Link || !bytes.Equal(g.Data, w.Data) ||
			g.DevMajor != w.DevMajor || g.DevMinor != w.DevMinor {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
	if cpio, err := exec.LookPath("cpio"); err == nil {
		c := exec.Command(cpio, "-it", "--quiet")
		c.Stdin = bytes.NewReader(buf.Bytes())
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("cpio -it: %v: %s", err, out)
		}
		if want := "bin\ndev/console\nbin/sh\na\nbin/longer-name\nempty\n"; string(out) != want {
			t.Errorf("cpio -it lists %q, want %q", out, want)
		}
	}
}

func TestWriteNewcRejectsAbsoluteNames(t *testing.T) {
	for _, name := range []string{"", "/init"} {
		if err := WriteNewc(io.Discard, []Entry{{Name: name, Mode: TypeRegular}}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// writeELF writes a minimal x86-64 executable; with interp it names a
// dynamic loader (PT_INTERP) like a dynamically linked program.
func writeELF(t *testing.T, path string, interp bool) {
	t.Helper()
	progs := []elf.Prog64{{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Vaddr: 0x400000, Paddr: 0x400000, Filesz: 120, Memsz: 120, Align: 0x1000}}
	if interp {
		progs = append([]elf.Prog64{{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: 64, Filesz: 1, Memsz: 1, Align: 1}}, progs...)
	}
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Entry: 0x400078, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs))}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.LittleEndian, h)
	for _, p := range progs {
		_ = binary.Write(&buf, binary.LittleEndian, p)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	static, dynamic := filepath.Join(dir, "static"), filepath.Join(dir, "dynamic")
	writeELF(t, static, false)
	writeELF(t, dynamic, true)
	script := filepath.Join(dir, "script")
	_ = os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	kernel := filepath.Join(dir, "vmlinuz")
	_ = os.WriteFile(kernel, []byte("k"), 0o644)
	for name, o := range map[string]Options{
		"no output":          {Anvil: static, Busybox: static, Kernel: kernel},
		"dynamic anvil":      {OutputDir: dir, Anvil: dynamic, Busybox: static, Kernel: kernel},
		"script as busybox":  {OutputDir: dir, Anvil: static, Busybox: script, Kernel: kernel},
		"modules, no kernel": {OutputDir: dir, Anvil: static, Busybox: static, ModulesDir: dir},
		"modules missing":    {OutputDir: dir, Anvil: static, Busybox: static, Kernel: kernel, ModulesDir: dir},
	} {
		if _, err := Build(context.Background(), o); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

func TestParseDepends(t *testing.T) {
	out := "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n"
	if p, err := parseDepends(out); err != nil || p != "linux-image-6.1.0-57-amd64" {
		t.Errorf("parseDepends = %q, %v", p, err)
	}
	if _, err := parseDepends("linux-image-amd64\n  Depends: firmware-x\n"); err == nil {
		t.Error("no linux-image dependency accepted")
	}
}

// The scripts parse as POSIX sh, /init loads the drivers by modalias and runs
// the agent with no flags.
func TestScripts(t *testing.T) {
	init := InitScript()
	for name, s := range map[string]string{"init": init, "udhcpc": udhcpcScript} {
		c := exec.Command("sh", "-n")
		c.Stdin = strings.NewReader(s)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("%s: sh -n: %v: %s", name, err, out)
		}
	}
	if !strings.Contains(init, "\n/bin/anvil ramdisk coldplug ") || strings.Contains(init, "insmod") {
		t.Errorf("init does not load the drivers by modalias (and only so):\n%s", init)
	}
	if !strings.Contains(init, "\n  /bin/anvil agent\n") {
		t.Errorf("init does not run the agent without flags:\n%s", init)
	}
}

// The udhcpc script applies a lease with ifconfig and ip (stand-ins that
// record their arguments).
func TestUdhcpcScriptAppliesLease(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	for _, tool := range []string{"ip", "ifconfig"} {
		stub := "#!/bin/sh\necho " + tool + " \"$@\" >>" + log + "\n"
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "default.script")
	_ = os.WriteFile(script, []byte(udhcpcScript), 0o755)
	c := exec.Command("sh", script, "bound")
	c.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "interface=eth0", "ip=10.0.2.15",
		"subnet=255.255.255.0", "router=10.0.2.2 10.0.2.3"}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, _ := os.ReadFile(log)
	want := "ifconfig eth0 10.0.2.15 netmask 255.255.255.0\nip route replace default via 10.0.2.2 dev eth0\n"
	if string(got) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
}
