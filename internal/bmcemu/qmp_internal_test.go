package bmcemu

import (
	"bufio"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
)

// TestQMPCommandArguments: a command without arguments is sent without an
// "arguments" member (qemu refuses "arguments": null, so a graceful
// shutdown's system_powerdown failed and the VM was killed at once); one
// with arguments sends them.
func TestQMPCommandArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no arguments", nil, `{"execute":"system_powerdown"}`},
		{"arguments", map[string]any{"id": "cd"}, `{"arguments":{"id":"cd"},"execute":"system_powerdown"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "qmp.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []string, 1)
			go func() { got <- fakeQMP(ln) }()
			if err := qmpCommand(sock, "system_powerdown", tc.args); err != nil {
				t.Fatalf("qmpCommand: %v", err)
			}
			lines := <-got
			if len(lines) != 2 || lines[0] != `{"execute":"qmp_capabilities"}` || lines[1] != tc.want {
				t.Fatalf("sent %q, want qmp_capabilities then %s", lines, tc.want)
			}
		})
	}
}

// fakeQMP answers one connection as qemu does: a greeting, then for each
// command an error when it carries a member qemu refuses ("arguments"
// not an object), else a return. It returns the commands received.
func fakeQMP(ln net.Listener) []string {
	c, err := ln.Accept()
	if err != nil {
		return nil
	}
	defer c.Close()
	_, _ = c.Write([]byte(`{"QMP": {"version": {}, "capabilities": []}}` + "\n"))
	var lines []string
	r := bufio.NewScanner(c)
	for len(lines) < 2 && r.Scan() {
		lines = append(lines, r.Text())
		var cmd map[string]any
		_ = json.Unmarshal(r.Bytes(), &cmd)
		reply := `{"return": {}}`
		if a, ok := cmd["arguments"]; ok {
			if _, obj := a.(map[string]any); !obj {
				reply = `{"error": {"class": "GenericError", "desc": "QMP input member 'arguments' must be an object"}}`
			}
		}
		_, _ = c.Write([]byte(`{"event": "NOISE"}` + "\n" + reply + "\n"))
	}
	return lines
}
