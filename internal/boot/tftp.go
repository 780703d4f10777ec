package boot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pin/tftp/v3"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/recent"
)

// TFTP serves the files of one directory, read-only, to PXE firmware that
// fetches iPXE (DefaultTFTPDir holds Debian's binaries). A client may name
// only a file directly in the directory ("undionly.kpxe" or
// "/undionly.kpxe"): no subdirectories, no "..", no writes. Symbolic links
// the operator put in the directory are followed (Debian's ipxe.efi is a
// link to /boot/ipxe.efi).
type TFTP struct {
	dir string
	// Log receives one line per transfer; set it before serving. Nil
	// discards.
	Log *slog.Logger
	// Seen, if set, records each request with its outcome under the
	// client's address (the boot Service's SeenLog).
	Seen *recent.Log[model.BootEvent]
}

// NewTFTP checks that dir is a directory.
func NewTFTP(dir string) (*TFTP, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("tftp: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("tftp: %s is not a directory", dir)
	}
	return &TFTP{dir: dir}, nil
}

// ListenAndServe binds addr (UDP, e.g. "0.0.0.0:69") and serves until ctx
// ends.
func (t *TFTP) ListenAndServe(ctx context.Context, addr string) error {
	conn, err := (&net.ListenConfig{}).ListenPacket(ctx, "udp", addr)
	if err != nil {
		return fmt.Errorf("tftp: %w", err)
	}
	return t.Serve(ctx, conn)
}

// Serve answers read requests arriving on conn until ctx ends, then waits
// for transfers in progress; it closes conn. Each transfer uses its own
// port on conn's address, as TFTP does.
func (t *TFTP) Serve(ctx context.Context, conn net.PacketConn) error {
	defer conn.Close()
	srv := tftp.NewServer(t.read, nil) // nil: write requests are refused
	stop := context.AfterFunc(ctx, srv.Shutdown)
	defer stop()
	t.log().Info("TFTP serving", "addr", conn.LocalAddr().String(), "dir", t.dir)
	if err := srv.Serve(conn); err != nil && ctx.Err() == nil {
		return fmt.Errorf("tftp: %w", err)
	}
	return nil
}

func (t *TFTP) log() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

// errNoSuchFile is what a client asking for anything else is told.
var errNoSuchFile = errors.New("file not found")

func (t *TFTP) read(name string, rf io.ReaderFrom) error {
	remote := ""
	if r, ok := rf.(interface{ RemoteAddr() net.UDPAddr }); ok {
		addr := r.RemoteAddr()
		remote = addr.String()
	}
	file := name
	if hasControl(file) { // what a client sent, shown to operators: quoted
		file = strconv.Quote(file)
	}
	ev := model.BootEvent{Service: "tftp", Remote: remote, File: file}
	defer func() {
		if ip := remoteIP(remote); ip != "" {
			ev.Time = time.Now().UTC()
			t.Seen.Add(ev, ipKey(ip))
		}
	}()
	f, err := t.open(name)
	if err != nil {
		t.log().Warn("TFTP read refused", "file", name, "remote", remote, "err", err)
		ev.Status, ev.Note = "not found", err.Error()
		return errNoSuchFile
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		if s, ok := rf.(interface{ SetSize(int64) }); ok {
			s.SetSize(st.Size()) // answers the tsize option
		}
	}
	n, err := rf.ReadFrom(f)
	ev.Bytes = n
	if err != nil {
		t.log().Warn("TFTP transfer failed", "file", name, "remote", remote, "bytes", n, "err", err)
		ev.Status, ev.Note = "failed", err.Error()
		return err
	}
	ev.Status = "sent"
	t.log().Info("TFTP transfer", "file", name, "remote", remote, "bytes", n)
	return nil
}

// open resolves a requested name to a regular file directly in t.dir.
func (t *TFTP) open(name string) (*os.File, error) {
	clean := strings.TrimLeft(name, "/")
	if clean == "" || clean == "." || clean == ".." || strings.ContainsAny(clean, `/\`) || hasControl(clean) {
		return nil, fmt.Errorf("name %q is not a file of the served directory", name)
	}
	f, err := os.Open(filepath.Join(t.dir, clean))
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is not a regular file", name)
	}
	return f, nil
}
