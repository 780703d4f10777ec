package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestBMCEmulatorQEMUFlags: bad --qemu (and --agent-api) flags stop the
// command with one clear error before anything starts.
func TestBMCEmulatorQEMUFlags(t *testing.T) {
	tests := []struct {
		args      []string
		want      string
		needsQEMU bool
	}{
		{[]string{"--forward", "10.0.2.100:80=127.0.0.1:80"}, "--forward and --boot-file need --qemu", false},
		{[]string{"--boot-file", "http://10.0.2.100/boot.ipxe"}, "--forward and --boot-file need --qemu", false},
		{[]string{"--qemu", "--forward", "10.0.2.100:80"}, "is not GUEST=HOST", false},
		{[]string{"--qemu", "--vm-memory", "8"}, "--vm-memory 8 is below 16 MiB", false},
		{[]string{"--qemu", "--vm-disk-mib", "0"}, "--vm-disk-mib 0 is below 1 MiB", false},
		{[]string{"--disk-dir", "/nonexistent"}, "--disk-dir needs --agent-api", false},
		{[]string{"--agent-api", "http://127.0.0.1:6385", "--disk-mib", "0"}, "--disk-mib 0 is below 1 MiB", false},
		{[]string{"--qemu", "--agent-api", "http://127.0.0.1:6385"}, "qemu VMs boot their own", false},
		{[]string{"--qemu", "--forward", "10.0.2.100:80=192.0.2.1:80"}, "is not a loopback address:port", true},
		{[]string{"--qemu", "--forward", "10.0.3.1:80=127.0.0.1:80"}, "is not an address:port in 10.0.2.0/24", true},
		{[]string{"--qemu", "--forward", "10.0.2.2:80=127.0.0.1:80"}, "is not an address:port in 10.0.2.0/24", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if tt.needsQEMU {
				testbin.Need(t, "qemu-system-x86_64", "qemu-system-x86")
			}
			var out, errOut bytes.Buffer
			cmd := newBMCEmulator(&out, &errOut)
			cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0", "-n", "1"}, tt.args...))
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a command that starts returns at once
			err := cmd.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, tt.want)
			}
		})
	}
}
