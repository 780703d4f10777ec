package redfish

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/anvil-metal/anvil/internal/model"
)

// KeySSHHostKey is the driver_info key naming the BMC's SSH host key, for
// the redfish-serial console of a system whose SerialConsole is SSH only:
// a public key as ssh-keyscan prints it ("ssh-ed25519 AAAA...", a leading
// host name is ignored) or its SHA256 fingerprint ("SHA256:..."). Without
// it the console is not opened over SSH: an unknown key could be anyone's,
// and the BMC's password is sent to it.
const KeySSHHostKey = "redfish_serial_ssh_host_key"

// sshHostKey reads KeySSHHostKey: ok is false when it is not set.
func sshHostKey(n *model.Node) (check ssh.HostKeyCallback, ok bool, err error) {
	v, set := n.DriverInfo[KeySSHHostKey]
	if !set || v == nil {
		return nil, false, nil
	}
	s, isStr := v.(string)
	s = strings.TrimSpace(s)
	if !isStr || s == "" {
		return nil, false, fmt.Errorf("%s must be an SSH public key or a SHA256: fingerprint", KeySSHHostKey)
	}
	if fp, isFP := strings.CutPrefix(s, "SHA256:"); isFP && !strings.ContainsAny(fp, " \t") {
		return func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if subtle.ConstantTimeCompare([]byte(ssh.FingerprintSHA256(key)), []byte(s)) != 1 {
				return fmt.Errorf("the BMC's SSH host key %s is not %s (%s)", ssh.FingerprintSHA256(key), s, KeySSHHostKey)
			}
			return nil
		}, true, nil
	}
	fields := strings.Fields(s)
	var want ssh.PublicKey
	for i := range fields { // "[host] type base64 [comment]"
		if k, _, _, _, perr := ssh.ParseAuthorizedKey([]byte(strings.Join(fields[i:], " "))); perr == nil {
			want = k
			break
		}
	}
	if want == nil {
		return nil, false, fmt.Errorf("%s is neither an SSH public key nor a SHA256: fingerprint", KeySSHHostKey)
	}
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		if key.Type() != want.Type() || !bytes.Equal(key.Marshal(), want.Marshal()) {
			return fmt.Errorf("the BMC's SSH host key %s is not the one in %s (%s)", ssh.FingerprintSHA256(key), KeySSHHostKey, ssh.FingerprintSHA256(want))
		}
		return nil
	}, true, nil
}

// openSSH opens the system's SSH serial console on host: a session with a
// terminal and a shell, into which the console's entry command (the
// SerialConsole's ConsoleEntryCommand, for a console shared with the
// manager's CLI) is typed first.
func (c *SerialConsole) openSSH(ctx context.Context, in info, n *model.Node, host string, p sshConsole) (io.ReadWriteCloser, error) {
	check, ok, err := sshHostKey(n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the BMC %s offers its serial console over SSH only: set driver_info %s to its SSH host key (ssh-keyscan -p %d %s) or the key's SHA256 fingerprint",
			in.address, KeySSHHostKey, p.port, host)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(p.port))
	password := in.password
	cfg := &ssh.ClientConfig{
		User: in.username,
		Auth: []ssh.AuthMethod{ssh.Password(password),
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = password
				}
				return answers, nil
			})},
		HostKeyCallback: check,
		Timeout:         c.d.cfg.Timeout,
	}
	d := net.Dialer{Timeout: c.d.cfg.Timeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SSH serial console %s: %w", addr, err)
	}
	conn, chans, reqs, err := ssh.NewClientConn(raw, addr, cfg)
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("SSH serial console %s (user %q): %s", addr, in.username, Scrub(err.Error(), password))
	}
	client := ssh.NewClient(conn, chans, reqs)
	s, err := c.sshSession(client, p.entry)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("SSH serial console %s: %w", addr, err)
	}
	s.client = client
	return s, nil
}

// sshConsole is a SerialConsole.SSH entry.
type sshConsole struct {
	port  int
	entry string // ConsoleEntryCommand
}

func (c *SerialConsole) sshSession(client *ssh.Client, entry string) (*sshConn, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 115200, ssh.TTY_OP_OSPEED: 115200}
	if err := sess.RequestPty("vt100", 24, 80, modes); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("terminal: %w", err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	if err := sess.Shell(); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("shell: %w", err)
	}
	if entry != "" {
		if _, err := io.WriteString(in, entry+"\r"); err != nil {
			_ = sess.Close()
			return nil, fmt.Errorf("console entry command: %w", err)
		}
	}
	return &sshConn{sess: sess, in: in, out: out}, nil
}

// sshConn is an SSH serial console session as a byte stream.
type sshConn struct {
	client *ssh.Client
	sess   *ssh.Session
	in     io.WriteCloser
	out    io.Reader
	once   sync.Once
}

func (s *sshConn) Read(p []byte) (int, error) { return s.out.Read(p) }

func (s *sshConn) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close ends the session and the connection.
func (s *sshConn) Close() error {
	var err error
	s.once.Do(func() {
		_ = s.sess.Close()
		if cerr := s.client.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	})
	return err
}
