package events

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait of these tests; nothing waits for it to pass.
const testTimeout = 10 * time.Second

// scriptedServer answers each stream request with the next step of a script
// and records the Last-Event-ID and query of each.
type scriptedServer struct {
	mu       sync.Mutex
	steps    []func(w http.ResponseWriter)
	cursors  []string
	queries  []string
	finished chan struct{} // closed when the script runs out
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.cursors = append(s.cursors, r.Header.Get("Last-Event-ID"))
	s.queries = append(s.queries, r.URL.RawQuery)
	if len(s.steps) == 0 {
		s.mu.Unlock()
		close(s.finished)
		<-r.Context().Done()
		return
	}
	step := s.steps[0]
	s.steps = s.steps[1:]
	s.mu.Unlock()
	step(w)
}

// stream writes events then ends the response (a dropped connection).
func stream(evs ...Event) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", ContentType)
		var b []byte
		for i := range evs {
			if evs[i].Type == "" { // a heartbeat carrying a position
				b = AppendHeartbeat(b, evs[i].ID)
				continue
			}
			b = AppendSSE(b, &evs[i])
		}
		_, _ = w.Write(b)
	}
}

func status(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprint(w, body)
	}
}

func upd(id uint64, state string) Event {
	return Event{ID: id, Type: TypeUpdated, Node: "u1", Changed: []string{FieldProvisionState},
		State: &NodeState{ProvisionState: state}}
}

func TestClientReconnects(t *testing.T) {
	ironicErr := `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Unauthorized.\", \"debuginfo\": null}"}`
	tests := []struct {
		name        string
		steps       []func(w http.ResponseWriter)
		wantStates  []string // provision states delivered, in order
		wantCursors []string // Last-Event-ID of each request
		wantError   string   // a final TypeError event's text
	}{
		{name: "resumes from the last event after a drop",
			steps:       []func(http.ResponseWriter){stream(upd(11, "a"), upd(12, "b")), stream(upd(13, "c"))},
			wantStates:  []string{"a", "b", "c"},
			wantCursors: []string{"", "12", "13"}},
		{name: "a heartbeat moves the cursor",
			steps:       []func(http.ResponseWriter){stream(upd(11, "a"), Event{ID: 40}), stream(upd(41, "b"))},
			wantStates:  []string{"a", "b"},
			wantCursors: []string{"", "40", "41"}},
		{name: "overflow reconnects without delivering it",
			steps: []func(http.ResponseWriter){
				stream(upd(11, "a"), Event{ID: 11, Type: TypeOverflow}, upd(99, "never")),
				stream(upd(12, "b"))},
			wantStates:  []string{"a", "b"},
			wantCursors: []string{"", "11", "12"}},
		{name: "server errors are retried",
			steps: []func(http.ResponseWriter){stream(upd(11, "a")), status(503, "busy"),
				status(502, "bad gateway"), stream(upd(12, "b"))},
			wantStates:  []string{"a", "b"},
			wantCursors: []string{"", "11", "11", "11", "12"}},
		{name: "a refused reconnection ends the stream",
			steps:       []func(http.ResponseWriter){stream(upd(11, "a")), status(401, ironicErr)},
			wantStates:  []string{"a"},
			wantCursors: []string{"", "11"},
			wantError:   "Unauthorized."},
		{name: "resets are delivered",
			steps:       []func(http.ResponseWriter){stream(Event{ID: 50, Type: TypeReset}, upd(51, "a"))},
			wantStates:  []string{"reset", "a"},
			wantCursors: []string{"", "51"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &scriptedServer{steps: tt.steps, finished: make(chan struct{})}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			c := &Client{BaseURL: ts.URL + "/v1/", MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
			ch, err := c.Subscribe(ctx, Filter{Nodes: []string{"u1"}, Snapshot: true})
			if err != nil {
				t.Fatal(err)
			}
			var states []string
			var final string
			for len(states) < len(tt.wantStates) || (tt.wantError != "" && final == "") {
				select {
				case e, ok := <-ch:
					if !ok {
						t.Fatalf("closed after %v", states)
					}
					switch e.Type {
					case TypeError:
						final = e.Error
					case TypeReset:
						states = append(states, "reset")
					default:
						states = append(states, e.State.ProvisionState)
					}
				case <-ctx.Done():
					t.Fatalf("timed out with %v", states)
				}
			}
			if !slices.Equal(states, tt.wantStates) {
				t.Fatalf("states %v, want %v", states, tt.wantStates)
			}
			if tt.wantError != "" {
				if _, ok := <-ch; ok || !strings.Contains(final, tt.wantError) {
					t.Fatalf("final error %q (then open: %v), want %q", final, ok, tt.wantError)
				}
			} else {
				select {
				case <-srv.finished:
				case <-ctx.Done():
					t.Fatal("script not finished")
				}
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if !slices.Equal(srv.cursors, tt.wantCursors) {
				t.Fatalf("Last-Event-IDs %q, want %q", srv.cursors, tt.wantCursors)
			}
			for _, q := range srv.queries {
				if q != "node=u1&snapshot=true" {
					t.Fatalf("query %q", q)
				}
			}
		})
	}
}

func TestClientFirstConnectionError(t *testing.T) {
	srv := &scriptedServer{steps: []func(http.ResponseWriter){status(404,
		`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Resource could not be found.\", \"debuginfo\": null}"}`)},
		finished: make(chan struct{})}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, err := Subscribe(context.Background(), ts.URL, Filter{})
	se, ok := err.(*StatusError)
	if !ok || se.Status != 404 || se.Message != "Resource could not be found." {
		t.Fatalf("err %v", err)
	}
}

// TestClientGivesUp: with GiveUpAfter, a stream whose server went away ends
// with a TypeError event saying the connection was lost, instead of
// reconnecting forever; without it the client keeps trying.
func TestClientGivesUp(t *testing.T) {
	srv := httptest.NewServer(&scriptedServer{steps: []func(http.ResponseWriter){stream(upd(1, "deploying"))},
		finished: make(chan struct{})})
	base := srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := &Client{BaseURL: base, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, GiveUpAfter: 50 * time.Millisecond}
	ch, err := c.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Type != TypeUpdated {
		t.Fatalf("first event %+v", ev)
	}
	srv.Close() // the server goes away
	var last Event
	for ev := range ch {
		last = ev
	}
	if ctx.Err() != nil {
		t.Fatal("the client never gave up")
	}
	if last.Type != TypeError || !strings.Contains(last.Error, "lost connection to "+base) {
		t.Fatalf("last event %+v, want a lost-connection error", last)
	}
}
