package ipmisim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	args, err := Write(dir, Config{Name: "bmc1", Port: 6230, Password: "pw", ChassisControl: "/x/chassis.sh /x/state"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-n", "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "bmc.emu"), "-s", filepath.Join(dir, "persist")}
	if strings.Join(args, " ") != strings.Join(want, " ") {
		t.Errorf("args %v, want %v", args, want)
	}
	lan, _ := os.ReadFile(filepath.Join(dir, "lan.conf"))
	for _, line := range []string{`name "bmc1"`, "  addr 127.0.0.1 6230", `chassis_control "/x/chassis.sh /x/state"`,
		`user 2 true "admin" "pw" admin 10 none md2 md5 straight`} {
		if !strings.Contains(string(lan), line+"\n") {
			t.Errorf("lan.conf lacks %q:\n%s", line, lan)
		}
	}
	if emu, _ := os.ReadFile(filepath.Join(dir, "bmc.emu")); string(emu) != Emu {
		t.Errorf("bmc.emu = %q", emu)
	}
	if fi, err := os.Stat(filepath.Join(dir, "persist")); err != nil || !fi.IsDir() {
		t.Errorf("persist dir: %v", err)
	}
}
