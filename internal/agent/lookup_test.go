package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// TestLookupMaskedToken: a lookup answering the token masked (Ironic's
// answer when it pregenerated the token for a virtual media boot) uses the
// boot media's ipa-agent-token, as IPA does; without one the lookup fails
// and the agent holds no token.
func TestLookupMaskedToken(t *testing.T) {
	const pregenerated = "0123456789abcdef0123456789abcdef"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var lr ipa.LookupResponse
		lr.Node.UUID = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
		lr.Config.AgentToken = ipa.MaskedToken
		lr.Config.HeartbeatTimeout = 300
		_ = json.NewEncoder(w).Encode(lr)
	}))
	defer api.Close()
	for _, tc := range []struct {
		name, token string
	}{{"with ipa-agent-token", pregenerated}, {"without", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{APIURL: api.URL, Disk: testDisk(t, 1<<20), MACs: []string{"52:54:00:00:00:01"},
				RootDir: t.TempDir(), AgentToken: tc.token})
			if err != nil {
				t.Fatal(err)
			}
			err = a.lookup(t.Context())
			if tc.token == "" {
				if err == nil || !strings.Contains(err.Error(), "ipa-agent-token") || a.currentToken() != "" {
					t.Fatalf("lookup = %v, token %q", err, a.currentToken())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.currentToken(); got != pregenerated {
				t.Fatalf("token %q, want the pregenerated one", got)
			}
		})
	}
}
