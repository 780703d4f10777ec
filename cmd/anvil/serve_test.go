package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
)

// pg is the PostgreSQL of the serve tests, started on first use.
var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// lockedBuffer is a bytes.Buffer written by the server's goroutines and
// read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeStartupMasksDatabasePassword: `anvil serve --database
// postgres://user:PASSWORD@...` on a real PostgreSQL prints its start-up
// line and its debug log without the password, and when it cannot start
// (an unescaped '@' and '/' in the password, which pgx misreads and quotes
// in its error) its error shows none either (issue 21, item 6). The test
// server trusts every local connection, so any password connects.
func TestServeStartupMasksDatabasePassword(t *testing.T) {
	base, err := url.Parse(pg.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, password string
		unescaped      bool // as a careless operator types it
		starts         bool
	}{
		{"plain", "Pg-Start-S3cret", false, true},
		{"escaped @ and /", "Pg@Start/S3cret", false, true},
		{"unescaped @ and /", "Pg@Start/S3cret", true, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := *base
			u.User = url.UserPassword(u.User.Username(), c.password)
			dsn := u.String()
			if c.unescaped {
				dsn = strings.Replace(dsn, u.User.String(), u.User.Username()+":"+c.password, 1)
			}
			var stdout, stderr lockedBuffer
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			root := newRoot(&stdout, &stderr)
			root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--database", dsn, "--log-level", "debug",
				"--host-id", fmt.Sprintf("startup-%d", i), "--http-root", filepath.Join(t.TempDir(), "boot")})
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			var serveErr error
			deadline := time.After(60 * time.Second)
		wait:
			for !strings.Contains(stdout.String(), "listening on") {
				select {
				case serveErr = <-done:
					break wait
				case <-deadline:
					t.Fatalf("serve did not print its start-up line\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			if c.starts != (serveErr == nil) {
				t.Fatalf("serve started %v (error %v), want %v\nstdout:\n%s\nstderr:\n%s", serveErr == nil, serveErr, c.starts, stdout.String(), stderr.String())
			}
			if c.starts {
				cancel()
				<-done
				if !strings.Contains(stdout.String(), "(database postgres://"+u.User.Username()+":******@") {
					t.Errorf("start-up line does not name the masked database:\n%s", stdout.String())
				}
			} else {
				printError(&stderr, serveErr)
				if !strings.Contains(stderr.String(), "anvil: open database") {
					t.Errorf("the refusal was not printed:\n%s", stderr.String())
				}
			}
			out := stdout.String() + stderr.String()
			for _, leak := range []string{c.password, url.QueryEscape(c.password), u.User.String(), "S3cret"} {
				if strings.Contains(out, leak) {
					t.Errorf("output shows the database password (%q):\n%s", leak, out)
				}
			}
		})
	}
}

// TestPrintErrorMasksDatabasePassword: an error quoting the database URL
// (what `anvil serve` prints before exiting) shows no password.
func TestPrintErrorMasksDatabasePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://anvil:Pg-Err-S3cret@127.0.0.1:1/anvil",
		"postgres://anvil:Pg@Err-S3cret@127.0.0.1:1/anvil",
		"postgres://anvil@127.0.0.1:1/anvil?password=Pg-Err-S3cret",
		"host=127.0.0.1 port=1 password=Pg-Err-S3cret",
	} {
		var buf bytes.Buffer
		printError(&buf, fmt.Errorf("open database: cannot parse `%s`: failed", dsn))
		if strings.Contains(buf.String(), "S3cret") || !strings.HasPrefix(buf.String(), "anvil: open database") {
			t.Errorf("printError(%s) = %q", dsn, buf.String())
		}
	}
}
