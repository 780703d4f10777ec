package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/store"
)

// testSessions: a session put is got back until it expires or is deleted;
// unknown and expired keys are ErrNotFound.
func testSessions(t *testing.T, su suite) {
	s := su.fresh(t)
	ctx := t.Context()
	data := []byte(`{"user":"op"}`)
	if err := s.Sessions().PutSession(ctx, "k1", data, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Sessions().GetSession(ctx, "k1"); err != nil || string(got) != string(data) {
		t.Fatalf("GetSession = %s, %v; want %s", got, err, data)
	}
	if _, err := s.Sessions().GetSession(ctx, "k2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}
	if err := s.Sessions().PutSession(ctx, "old", data, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sessions().GetSession(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired session: %v, want ErrNotFound", err)
	}
	// The next put prunes the expired one; the live one stays.
	if err := s.Sessions().PutSession(ctx, "k3", data, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sessions().GetSession(ctx, "k1"); err != nil {
		t.Fatalf("live session after a prune: %v", err)
	}
	if err := s.Sessions().DeleteSession(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sessions().GetSession(ctx, "k1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted session: %v, want ErrNotFound", err)
	}
	if err := s.Sessions().DeleteSession(ctx, "never"); err != nil {
		t.Fatalf("deleting an unknown session: %v", err)
	}
}
