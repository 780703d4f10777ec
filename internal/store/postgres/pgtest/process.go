package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// process is a postgres server this package started: data in dir, listening
// only on a unix socket in dir.
type process struct {
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    string
}

// startProcess runs initdb and postgres in a new temporary directory and
// waits until the server accepts connections. As root it runs them as the
// postgres user, since PostgreSQL refuses to run as root.
func startProcess(bin string) (*process, error) {
	dir, err := os.MkdirTemp("/tmp", "anvil-pg-") // short: socket paths are limited to ~100 bytes
	if err != nil {
		return nil, err
	}
	p := &process{dir: dir, log: filepath.Join(dir, "postgres.log"), exited: make(chan struct{})}
	cred, err := credential(dir)
	if err == nil {
		err = p.initdb(bin, cred)
	}
	if err == nil {
		err = p.run(bin, cred)
	}
	if err == nil {
		err = p.waitReady()
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// credential is who the server runs as: the postgres user when we are root
// (dir is handed over to it), else ourselves (nil).
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (p *process) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(cred)
	return cmd
}

func (p *process) initdb(bin string, cred *syscall.Credential) error {
	cmd := p.command(cred, filepath.Join(bin, "initdb"), "-D", filepath.Join(p.dir, "data"),
		"-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// run starts the server tuned for tests: no durability, no TCP.
func (p *process) run(bin string, cred *syscall.Credential) error {
	logf, err := os.Create(p.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	p.cmd = p.command(cred, filepath.Join(bin, "postgres"), "-D", filepath.Join(p.dir, "data"),
		"-k", p.dir, "-p", "5432", "-c", "listen_addresses=", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return nil
}

func (p *process) dsn(db string) string {
	return fmt.Sprintf("host=%s port=5432 user=postgres dbname=%s sslmode=disable", p.dir, db)
}

// waitReady polls until the server accepts a connection, it exits, or
// readyTimeout passes.
func (p *process) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, p.dsn("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postgres exited: %s", p.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %v: %v\n%s", readyTimeout, err, p.logTail())
		case <-tick.C:
		}
	}
}

func (p *process) createDatabase(name string) (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.dsn("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return p.dsn(name), nil
}

func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop shuts the server down (fast shutdown, then kill after 10 s) and
// removes its directory.
func (p *process) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if err := os.RemoveAll(p.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
}
