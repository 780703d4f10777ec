package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/internal/store/sqlite"
	"github.com/anvil-metal/anvil/internal/store/sqlstore"
)

// countingStore counts the port lookups by MAC the conductor makes.
type countingStore struct {
	store.Store
	perMAC, batched atomic.Int64
}

func (c *countingStore) Ports() store.PortStore { return countingPorts{c.Store.Ports(), c} }

// countingPorts is the port store that counts into c.
type countingPorts struct {
	store.PortStore
	c *countingStore
}

func (p countingPorts) GetPortByAddress(ctx context.Context, mac string) (*model.Port, error) {
	p.c.perMAC.Add(1)
	return p.PortStore.GetPortByAddress(ctx, mac)
}

func (p countingPorts) GetNodeByPortAddress(ctx context.Context, macs []string) (*model.Node, error) {
	p.c.batched.Add(1)
	return p.PortStore.GetNodeByPortAddress(ctx, macs)
}

// TestLookupAddresses: an agent's lookup takes at most maxLookupAddresses
// MACs (more are refused 400 before any query) and resolves them in one
// store query, not one per MAC (issue 21: 50,000 MACs cost 2.4 s).
func TestLookupAddresses(t *testing.T) {
	var cs *countingStore
	e := newEnvOn(t, func(now func() time.Time) store.Store {
		raw, err := sqlite.Open(context.Background(), t.TempDir()+"/anvil.db", sqlstore.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		cs = &countingStore{Store: raw}
		return cs
	})
	n := e.mustNode(nodeFixture("agent"))
	n.ProvisionState = "clean wait"
	if err := e.st.Nodes().UpdateNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	const mac = "52:54:00:12:34:56"
	if err := e.st.Ports().CreatePort(t.Context(), &model.Port{NodeUUID: n.UUID, Address: mac}); err != nil {
		t.Fatal(err)
	}
	unknown := func(k int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = fmt.Sprintf("02:00:00:00:%02x:%02x", i>>8, i&0xff)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		macs    []string
		want    int
		queries int64 // store lookups by MAC expected
		msg     string
	}{
		{"one known MAC", []string{mac}, http.StatusOK, 1, ""},
		{"the known MAC last of the most allowed", append(unknown(maxLookupAddresses-1), strings.ToUpper(mac)), http.StatusOK, 1, ""},
		{"only unknown MACs", unknown(maxLookupAddresses), http.StatusNotFound, 1, ""},
		{"one too many", append(unknown(maxLookupAddresses), mac), http.StatusBadRequest, 0, "at most 256 MAC addresses"},
		{"50,000", unknown(50000), http.StatusBadRequest, 0, "at most 256 MAC addresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs.perMAC.Store(0)
			cs.batched.Store(0)
			rec := e.do("GET", "/v1/lookup?addresses="+strings.Join(tc.macs, ","), "", latest)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.msg) {
				t.Fatalf("lookup: %d %s; want %d %q", rec.Code, rec.Body.String(), tc.want, tc.msg)
			}
			if got := cs.perMAC.Load() + cs.batched.Load(); got != tc.queries || cs.perMAC.Load() != 0 {
				t.Fatalf("%d lookups by one MAC and %d by many; want %d query in all", cs.perMAC.Load(), cs.batched.Load(), tc.queries)
			}
		})
	}
}
