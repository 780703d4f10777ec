package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/pkg/events"
)

// TestStreamWaiterLostConnection: a wait whose stream drops and whose
// server then stops answering fails with "lost connection to ..." once the
// reconnecting bound passes, instead of waiting out its timeout and
// reporting a stale state.
func TestStreamWaiterLostConnection(t *testing.T) {
	f := newFake()
	f.addNode("d1", "deploying", map[string]any{"target_provision_state": "active"})
	var gone atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case gone.Load():
			http.Error(w, "server stopped", http.StatusServiceUnavailable)
		case r.URL.Path == events.StreamPath:
			w.Header().Set("Content-Type", events.ContentType)
			_, _ = w.Write(events.AppendHeartbeat(nil, 1))
			gone.Store(true) // the connection ends here, and the server with it
		default:
			f.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	c := testClient(t, srv, 0, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := &StreamWaiter{Client: c, LostAfter: 50 * time.Millisecond}
	out := w.Wait(ctx, []string{"d1"}, Want{Provision: "active", Timeout: 120 * time.Second})
	if ctx.Err() != nil {
		t.Fatal("the wait did not notice the lost connection")
	}
	err := out[0].Err
	if err == nil || !strings.Contains(err.Error(), "lost connection to "+srv.URL) || !strings.Contains(err.Error(), "d1") {
		t.Fatalf("outcome %+v, want a lost-connection error naming the node", out[0])
	}
}
