package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// EnvDSN names the environment variable that points the tests at an existing
// PostgreSQL instead of a throwaway one.
const EnvDSN = "ANVIL_TEST_POSTGRES_DSN"

// readyTimeout bounds the wait for a started server to accept connections.
const readyTimeout = 30 * time.Second

// Server is a PostgreSQL for one test binary: the one named by $ANVIL_TEST_POSTGRES_DSN,
// or a throwaway server started on first use. Share one per test binary and
// call Stop from TestMain.
type Server struct {
	once  sync.Once
	skip  string // why there is no server (PostgreSQL not installed)
	err   error
	base  string  // DSN of the test database
	admin *sql.DB // on base, for creating and dropping schemas
	proc  *process
}

// New returns a Server that starts nothing until DSN is first called.
func New() *Server { return &Server{} }

// DSN returns the DSN of a fresh, empty schema of the test database, dropped
// when t ends. Without PostgreSQL it skips t, or fails it when $CI is set (CI
// must run the PostgreSQL tests).
func (s *Server) DSN(t testing.TB) string {
	t.Helper()
	s.once.Do(s.start)
	switch {
	case s.skip != "":
		testbin.Missing(t, s.skip)
	case s.err != nil:
		t.Fatalf("pgtest: %v", s.err)
	}
	schema := "anvil_test_" + randomHex()
	ctx := context.Background()
	if _, err := s.admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := s.admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema: %v", err)
		}
	})
	return withSearchPath(s.base, schema)
}

// Stop stops a server this package started and removes its files.
func (s *Server) Stop() {
	if s.admin != nil {
		_ = s.admin.Close()
	}
	if s.proc != nil {
		s.proc.stop()
	}
}

func (s *Server) start() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s.base = dsn
	} else {
		bin, err := findBinaries()
		if err != nil {
			s.skip = err.Error()
			return
		}
		if s.proc, err = startProcess(bin); err != nil {
			s.err = err
			return
		}
		if s.base, err = s.proc.createDatabase("anvil_test"); err != nil {
			s.err = err
			return
		}
	}
	cfg, err := pgx.ParseConfig(s.base)
	if err != nil {
		s.err = err
		return
	}
	s.admin = stdlib.OpenDB(*cfg)
	s.err = s.admin.Ping()
}

// findBinaries returns the bin directory of the newest installed PostgreSQL.
func findBinaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed (no initdb and postgres in " +
		"/usr/lib/postgresql/*/bin or $PATH): run `apt-get install postgresql`, or set " +
		EnvDSN + " to a database the tests may create schemas in")
}

func versionOf(binDir string) int {
	var v int
	_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(binDir)), "%d", &v)
	return v
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withSearchPath adds search_path to a URL or keyword/value DSN; pgx sends
// unknown parameters to the server as run-time settings.
func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}

// URL is DSN as a postgres:// URL, the form `anvil serve --database` takes.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	return asURL(t, s.DSN(t))
}

// asURL turns a key=value DSN (values without spaces or quotes, as this
// package writes them) into a postgres:// URL; a URL is returned as is.
func asURL(t testing.TB, dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return dsn
	}
	u := url.URL{Scheme: "postgres", Host: ""}
	q := url.Values{}
	for _, kv := range strings.Fields(dsn) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.ContainsAny(v, `'\`) {
			t.Fatalf("pgtest: cannot turn DSN part %q into a URL", kv)
		}
		switch k {
		case "user":
			u.User = url.User(v)
		case "dbname":
			u.Path = "/" + v
		default:
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
