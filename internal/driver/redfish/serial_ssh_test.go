package redfish_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/redfish"
	"github.com/anvil-metal/anvil/internal/model"
)

// sshBMC is a BMC's SSH serial console: password authentication, a
// terminal and a shell that answers the entry command "console com2" with
// "[connected to com2]" and then echoes each line typed as "echo: LINE".
type sshBMC struct {
	addr    string
	hostKey ssh.PublicKey
	mu      sync.Mutex
	typed   []string
	ptys    int
}

func startSSHBMC(t *testing.T, password string) *sshBMC {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
		if c.User() == "admin" && string(pw) == password {
			return nil, nil
		}
		return nil, fmt.Errorf("denied")
	}}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &sshBMC{addr: ln.Addr().String(), hostKey: signer.PublicKey()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); b.serve(c, cfg) }()
		}
	}()
	return b
}

func (b *sshBMC) serve(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			for r := range chReqs {
				if r.Type == "pty-req" {
					b.mu.Lock()
					b.ptys++
					b.mu.Unlock()
				}
				_ = r.Reply(r.Type == "pty-req" || r.Type == "shell", nil)
			}
		}()
		_, _ = io.WriteString(ch, "BMC CLI\r\n")
		sc := bufio.NewScanner(ch)
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := strings.IndexAny(string(data), "\r\n"); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				continue
			}
			b.mu.Lock()
			b.typed = append(b.typed, line)
			b.mu.Unlock()
			if line == "console com2" {
				_, _ = io.WriteString(ch, "[connected to com2]\r\n")
				continue
			}
			_, _ = io.WriteString(ch, "echo: "+line+"\r\n")
		}
		ch.Close()
	}
}

// fakeRedfish serves a service root and one system whose SerialConsole is
// SSH only, at sshPort.
func fakeRedfish(t *testing.T, sshPort int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/redfish/v1", "/redfish/v1/":
			_ = json.NewEncoder(w).Encode(map[string]any{"@odata.id": "/redfish/v1/", "Id": "RootService",
				"Systems": map[string]any{"@odata.id": "/redfish/v1/Systems"}})
		case "/redfish/v1/Systems/1":
			_ = json.NewEncoder(w).Encode(map[string]any{"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On",
				"SerialConsole": map[string]any{
					"IPMI":   map[string]any{"ServiceEnabled": false},
					"SSH":    map[string]any{"ServiceEnabled": true, "Port": sshPort, "ConsoleEntryCommand": "console com2", "SharedWithManagerCLI": true},
					"Telnet": map[string]any{"ServiceEnabled": false}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSerialConsoleOverSSH: a system whose SerialConsole is SSH only gets
// an SSH session with a terminal, the entry command typed first, and the
// console's bytes both ways — once the BMC's host key is known, as a key or
// a fingerprint; an unknown or wrong key is refused before the password is
// sent, and no error holds the password.
func TestSerialConsoleOverSSH(t *testing.T) {
	const pw = "ssh-Console-pw-7"
	bmc := startSSHBMC(t, pw)
	_, port, _ := net.SplitHostPort(bmc.addr)
	var sshPort int
	fmt.Sscan(port, &sshPort)
	rf := fakeRedfish(t, sshPort)
	sol := func(context.Context, string, int, string, string) (io.ReadWriteCloser, error) {
		t.Error("SOL opened for a system without IPMI")
		return nil, io.EOF
	}
	sc := fastDriver().SerialConsole(sol)
	node := func(hostKey any) *model.Node {
		di := model.JSON{"redfish_address": rf.URL, "redfish_system_id": "/redfish/v1/Systems/1",
			"redfish_username": "admin", "redfish_password": pw, "redfish_auth_type": "basic"}
		if hostKey != nil {
			di[redfish.KeySSHHostKey] = hostKey
		}
		return &model.Node{UUID: "5b2f8a3c-1d4e-4f6a-9b8c-7d6e5f4a3b2c", Driver: "redfish", DriverInfo: di}
	}
	ctx := context.Background()
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(bmc.hostKey)))
	if _, err := sc.OpenConsole(ctx, node(nil)); err == nil || !strings.Contains(err.Error(), redfish.KeySSHHostKey) || strings.Contains(err.Error(), pw) {
		t.Errorf("without the host key: %v", err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	wrong := string(ssh.MarshalAuthorizedKey(otherSigner.PublicKey()))
	if _, err := sc.OpenConsole(ctx, node(wrong)); err == nil || !strings.Contains(err.Error(), "host key") || strings.Contains(err.Error(), pw) {
		t.Errorf("a wrong host key: %v", err)
	}
	if err := sc.Validate(&driver.Task{Node: node("not a key")}); err == nil {
		t.Error("Validate accepted a malformed host key")
	}
	for _, hk := range []string{"127.0.0.1 " + authorized, ssh.FingerprintSHA256(bmc.hostKey)} {
		if err := sc.Validate(&driver.Task{Node: node(hk)}); err != nil {
			t.Fatalf("Validate(%q): %v", hk, err)
		}
		rw, err := sc.OpenConsole(ctx, node(hk))
		if err != nil {
			t.Fatalf("host key %q: %v", hk, err)
		}
		got := readUntilText(t, rw, "[connected to com2]")
		if _, err := io.WriteString(rw, "uname\r"); err != nil {
			t.Fatal(err)
		}
		got += readUntilText(t, rw, "echo: uname")
		rw.Close()
		if !strings.Contains(got, "BMC CLI") {
			t.Errorf("console output %q", got)
		}
	}
	bmc.mu.Lock()
	defer bmc.mu.Unlock()
	if bmc.ptys != 2 || len(bmc.typed) != 4 || bmc.typed[0] != "console com2" || bmc.typed[1] != "uname" {
		t.Errorf("the BMC saw %d terminals and typed lines %q", bmc.ptys, bmc.typed)
	}
	if _, err := sc.OpenConsole(ctx, func() *model.Node {
		n := node(authorized)
		n.DriverInfo["redfish_password"] = "wrong-password"
		return n
	}()); err == nil || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a refused password: %v", err)
	}
}

// readUntilText reads r until its output contains want (10 s at most).
func readUntilText(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		var got strings.Builder
		buf := make([]byte, 512)
		for !strings.Contains(got.String(), want) {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		done <- got.String()
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, want) {
			t.Fatalf("console output %q lacks %q", got, want)
		}
		return got
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q on the console", want)
		return ""
	}
}
