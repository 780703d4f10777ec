package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
)

// TestAuditLog: every write is one record in the audit file (0600), with
// the user, node and result; reads are not recorded; secrets never are.
func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.HTTPBasic, UserFile: htpasswd(t, "admin", "Aud1t-pw")}
		c.Security.AuditLog = path
	})
	c := http.DefaultClient
	if st, body := request(t, c, s.base, "POST", "/v1/nodes", "", "admin", "Aud1t-pw",
		`{"driver": "fake-hardware", "name": "n1", "driver_info": {"ipmi_password": "Zq9-audit"}}`); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	request(t, c, s.base, "PATCH", "/v1/nodes/n1", "", "admin", "Aud1t-pw", `[{"op": "add", "path": "/driver_info/ipmi_password", "value": "Zq9-patch"}]`)
	request(t, c, s.base, "PATCH", "/v1/nodes/n1", "", "admin", "Aud1t-pw", `[{"op": "add", "path": "/nope", "value": 1}]`)
	request(t, c, s.base, "GET", "/v1/nodes/n1", "", "admin", "Aud1t-pw", "")
	s.shutdown()

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode %v, want 0600", st.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "Zq9") || strings.Contains(string(raw), "Aud1t-pw") {
		t.Errorf("a secret in the audit file:\n%s", raw)
	}
	read := func(f AuditFilter) []AuditRecord {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		recs, err := ReadAudit(fh, f)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	all := read(AuditFilter{})
	if len(all) != 3 {
		t.Fatalf("%d records, want 3 (create and two patches):\n%s", len(all), raw)
	}
	if r := all[0]; r.User != "admin" || r.Method != "POST" || r.Status != 201 || r.RequestID == "" || r.Remote == "" {
		t.Errorf("create record %+v", r)
	}
	if r := all[2]; r.Node != "n1" || r.Status != 400 {
		t.Errorf("failed patch record %+v", r)
	}
	if n := len(read(AuditFilter{Node: "n1"})); n != 2 {
		t.Errorf("--node n1: %d records, want 2", n)
	}
	if n := len(read(AuditFilter{User: "someone"})); n != 0 {
		t.Errorf("--user someone: %d records", n)
	}
	if n := len(read(AuditFilter{Since: time.Now().Add(time.Hour)})); n != 0 {
		t.Errorf("--since the future: %d records", n)
	}
}
