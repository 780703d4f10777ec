package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/store"
)

func testLocks(t *testing.T, su suite) {
	runScenarios(t, su, []scenario{
		{"reserve and release", reserveRelease},
		{"reserve errors", reserveErrors},
		{"release errors", releaseErrors},
		{"release host", releaseHost},
		{"reservation race: exactly one winner", reserveRace},
	})
}

func reserveRelease(t *testing.T, s store.Store) {
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("l"))
	got, err := s.Nodes().ReserveNode(ctx, n.UUID, "c1")
	wantErr(t, "ReserveNode", err, nil)
	if got.Reservation != "c1" || got.Version != n.Version || got.UUID != n.UUID {
		t.Fatalf("reserved node: reservation %q version %d, want c1 and version %d (the lock is not data)",
			got.Reservation, got.Version, n.Version)
	}
	if stored := mustGetNode(t, s, n.UUID); stored.Reservation != "c1" || stored.Version != n.Version {
		t.Fatalf("stored: reservation %q version %d", stored.Reservation, stored.Version)
	}
	wantErr(t, "ReleaseNode", s.Nodes().ReleaseNode(ctx, n.UUID, "c1"), nil)
	if stored := mustGetNode(t, s, n.UUID); stored.Reservation != "" || stored.Version != n.Version {
		t.Fatalf("released: reservation %q version %d", stored.Reservation, stored.Version)
	}
	_, err = s.Nodes().ReserveNode(ctx, n.UUID, "c2")
	wantErr(t, "ReserveNode after release", err, nil)
}

func reserveErrors(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("l"))
	if _, err := s.Nodes().ReserveNode(t.Context(), n.UUID, "c1"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, node, host string
		want             error
	}{
		{"held by another host", n.UUID, "c2", &store.LockedError{Node: n.UUID, Holder: "c1"}},
		{"held by the same host", n.UUID, "c1", &store.LockedError{Node: n.UUID, Holder: "c1"}},
		{"unknown node", uuid.NewString(), "c1", store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Nodes().ReserveNode(t.Context(), c.node, c.host)
			if got != nil {
				t.Fatalf("ReserveNode returned a node with error %v", err)
			}
			checkLockErr(t, "ReserveNode", err, c.want)
		})
	}
}

// checkLockErr compares err with want: a *store.LockedError is compared by
// value, anything else with errors.Is.
func checkLockErr(t *testing.T, what string, err, want error) {
	t.Helper()
	var le *store.LockedError
	if errors.As(want, &le) {
		wantLocked(t, what, err, le.Node, le.Holder)
		return
	}
	wantErr(t, what, err, want)
}

func releaseErrors(t *testing.T, s store.Store) {
	held := mustCreateNode(t, s, newNode("held"))
	free := mustCreateNode(t, s, newNode("free"))
	if _, err := s.Nodes().ReserveNode(t.Context(), held.UUID, "c1"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, node, host string
		want             error
	}{
		{"held by another host", held.UUID, "c2", &store.LockedError{Node: held.UUID, Holder: "c1"}},
		{"already free", free.UUID, "c1", nil},
		{"unknown node", uuid.NewString(), "c1", store.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkLockErr(t, "ReleaseNode", s.Nodes().ReleaseNode(t.Context(), c.node, c.host), c.want)
		})
	}
	if got := mustGetNode(t, s, held.UUID); got.Reservation != "c1" {
		t.Fatalf("a refused release changed the reservation to %q", got.Reservation)
	}
}

func releaseHost(t *testing.T, s store.Store) {
	ctx := t.Context()
	var mine []string
	for i := range 6 {
		n := mustCreateNode(t, s, newNode(fmt.Sprint("n", i)))
		host := []string{"c1", "c2", ""}[i%3]
		if host == "" {
			continue
		}
		if _, err := s.Nodes().ReserveNode(ctx, n.UUID, host); err != nil {
			t.Fatal(err)
		}
		if host == "c1" {
			mine = append(mine, n.UUID)
		}
	}
	got, err := s.Nodes().ReleaseHost(ctx, "c1")
	wantErr(t, "ReleaseHost", err, nil)
	wantEqual(t, "released", sortedCopy(got), sortedCopy(mine))
	if n, err := s.Nodes().CountNodes(ctx, store.NodeQuery{ReservedBy: "c1"}); err != nil || n != 0 {
		t.Fatalf("nodes still held by c1: %d, %v", n, err)
	}
	if n, err := s.Nodes().CountNodes(ctx, store.NodeQuery{ReservedBy: "c2"}); err != nil || n != 2 {
		t.Fatalf("nodes held by c2: %d, %v; want 2 (untouched)", n, err)
	}
	got, err = s.Nodes().ReleaseHost(ctx, "c1")
	if err != nil || len(got) != 0 {
		t.Fatalf("second ReleaseHost = %v, %v; want nothing", got, err)
	}
}

// reserveRace has 50 goroutines race for one node, twice: exactly one wins
// each round and every loser is told who won.
func reserveRace(t *testing.T, s store.Store) {
	n := mustCreateNode(t, s, newNode("race"))
	for round := range 2 {
		const racers = 50
		start := make(chan struct{})
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Nodes().ReserveNode(t.Context(), n.UUID, fmt.Sprintf("r%d-c%d", round, i))
			})
		}
		close(start)
		wg.Wait()
		winner := ""
		for i, err := range errs {
			if err == nil {
				if winner != "" {
					t.Fatalf("round %d: two winners, %s and r%d-c%d", round, winner, round, i)
				}
				winner = fmt.Sprintf("r%d-c%d", round, i)
			}
		}
		if winner == "" {
			t.Fatalf("round %d: nobody won: %v", round, errs[0])
		}
		for _, err := range errs {
			if err != nil {
				wantLocked(t, "loser", err, n.UUID, winner)
			}
		}
		if got := mustGetNode(t, s, n.UUID); got.Reservation != winner || got.Version != 1 {
			t.Fatalf("round %d: stored reservation %q version %d, want %s and 1",
				round, got.Reservation, got.Version, winner)
		}
		wantErr(t, "winner releases", s.Nodes().ReleaseNode(t.Context(), n.UUID, winner), nil)
	}
}
