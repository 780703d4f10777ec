package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/store/postgres"
	"github.com/anvil-metal/anvil/internal/store/postgres/pgtest"
	"github.com/anvil-metal/anvil/pkg/events"
)

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// testTimeout bounds every wait of these tests; nothing waits for it to pass.
const testTimeout = 20 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// migrated returns the DSN of a fresh, migrated schema.
func migrated(t testing.TB) string {
	t.Helper()
	dsn := pg.DSN(t)
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	return dsn
}

// open opens a Log (one process's end) on dsn, closed when the test ends.
func open(t testing.TB, dsn string, cfg Config) *Log {
	t.Helper()
	cfg.DSN, cfg.Log = dsn, quiet
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// follow starts a broker following l until the test ends.
func follow(t testing.TB, l *Log, cfg eventbus.Config) *eventbus.Broker {
	t.Helper()
	b, err := l.NewBroker(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Follow(ctx, b) }()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	return b
}

// update is the event writer w publishes as its i-th.
func update(w string, i int) events.Event {
	return events.Event{Type: events.TypeUpdated, Node: w, Changed: []string{events.FieldLastError},
		State: &events.NodeState{ProvisionState: "active", LastError: fmt.Sprint(i)}}
}

// collect reads n events from s.
func collect(t testing.TB, s *eventbus.Subscription, n int) []events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []events.Event
	for len(out) < n {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, e)
	}
	return out
}

func ids(evs []events.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestOrderAcrossProcesses: two logs (two processes) append concurrently
// from several goroutines each; a third follows. The follower gets every
// event once, IDs increasing, each writer's events in its order, and a
// reader polling the table meanwhile never sees an ID appear below one it
// already read (the commit-order invariant a resume relies on).
func TestOrderAcrossProcesses(t *testing.T) {
	dsn := migrated(t)
	writers := []*Log{open(t, dsn, Config{}), open(t, dsn, Config{})}
	follower := open(t, dsn, Config{})
	b := follow(t, follower, eventbus.Config{Buffer: 10000, SubscriberBuffer: 10000})
	sub := b.Subscribe(events.Filter{})
	defer sub.Close()

	stop := make(chan struct{})
	var polled []int64
	polling := make(chan error, 1)
	go func() { polling <- pollTable(dsn, stop, &polled) }()

	const goroutines, each = 4, 150
	var wg sync.WaitGroup
	for p, l := range writers {
		for g := range goroutines {
			wg.Go(func() {
				w := fmt.Sprintf("p%d-g%d", p, g)
				for i := range each {
					if wait := l.Append(update(w, i)); wait != nil {
						wait()
					}
				}
			})
		}
	}
	wg.Wait()
	total := len(writers) * goroutines * each
	got := collect(t, sub, total)
	close(stop)
	if err := <-polling; err != nil {
		t.Fatal(err)
	}

	next := map[string]int{}
	for i, e := range got {
		if i > 0 && e.ID <= got[i-1].ID {
			t.Fatalf("event %d: ID %d after %d", i, e.ID, got[i-1].ID)
		}
		if e.State == nil || e.State.LastError != fmt.Sprint(next[e.Node]) {
			t.Fatalf("%s: got %+v, want its event %d", e.Node, e.State, next[e.Node])
		}
		next[e.Node]++
	}
	all := tableIDs(t, dsn)
	if !slices.Equal(all, polled) {
		t.Fatalf("a reader polling the table saw %d IDs, the table holds %d: IDs became visible out of order", len(polled), len(all))
	}
	if len(all) != total {
		t.Fatalf("table holds %d events, want %d", len(all), total)
	}
}

// pollTable reads the table's new IDs in a loop, as a follower does, until
// stop, then once more.
func pollTable(dsn string, stop <-chan struct{}, out *[]int64) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	last := int64(0)
	read := func() error {
		rows, err := db.Query("SELECT id FROM node_events WHERE id > $1 ORDER BY id", last)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&last); err != nil {
				return err
			}
			*out = append(*out, last)
		}
		return rows.Err()
	}
	for {
		select {
		case <-stop:
			return read()
		default:
		}
		if err := read(); err != nil {
			return err
		}
	}
}

func tableIDs(t testing.TB, dsn string) []int64 {
	t.Helper()
	db := sqlDB(t, dsn)
	rows, err := db.Query("SELECT id FROM node_events ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func sqlDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestResumeOnAnotherProcess: a reader of process A disconnects halfway and
// resumes on process B with its last ID, on B running since before and on
// a B started after the events: it gets exactly the rest. An ID older than
// the table keeps is a reset.
func TestResumeOnAnotherProcess(t *testing.T) {
	dsn := migrated(t)
	w := open(t, dsn, Config{Keep: 300})
	a := follow(t, open(t, dsn, Config{}), eventbus.Config{})
	early := follow(t, open(t, dsn, Config{}), eventbus.Config{})
	subA := a.Subscribe(events.Filter{})
	start := subA.Start()

	const n = 200
	for i := range n {
		w.Append(update("n", i))()
	}
	pub := collect(t, subA, n)
	subA.Close()
	late := follow(t, open(t, dsn, Config{}), eventbus.Config{})

	for name, b := range map[string]*eventbus.Broker{"running": early, "started after": late} {
		for _, cut := range []int{0, 1, n / 2, n - 1, n} {
			after := start
			if cut > 0 {
				after = pub[cut-1].ID
			}
			if err := b.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			s, ok := b.Resume(events.Filter{}, after)
			rest, _, err := s.Take(nil)
			s.Close()
			if !ok || err != nil {
				t.Fatalf("%s, cut %d: ok %v err %v", name, cut, ok, err)
			}
			if !slices.Equal(ids(append(slices.Clone(pub[:cut]), rest...)), ids(pub)) {
				t.Fatalf("%s, cut %d: got %v after %d", name, cut, ids(rest), after)
			}
		}
	}

	// Beyond what the table keeps: a process started now cannot resume.
	for i := range 400 {
		w.Append(update("n", n+i))()
	}
	if err := w.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(tableIDs(t, dsn)); got != 300 {
		t.Fatalf("after prune the table holds %d events, want 300", got)
	}
	fresh := follow(t, open(t, dsn, Config{}), eventbus.Config{})
	if s, ok := fresh.Resume(events.Filter{}, pub[n-1].ID); ok {
		s.Close()
		t.Fatal("resume from a pruned event: ok, want a reset")
	}
	if s, ok := fresh.Resume(events.Filter{}, uint64(tableIDs(t, dsn)[0])); !ok {
		t.Fatal("resume from the oldest kept event: reset, want ok")
	} else if rest, _, _ := s.Take(nil); len(rest) != 299 {
		t.Fatalf("resume from the oldest kept event replayed %d, want 299", len(rest))
	}
}

// TestLargeEvent: an event far above NOTIFY's 8,000-byte payload limit
// reaches the followers whole.
func TestLargeEvent(t *testing.T) {
	dsn := migrated(t)
	w := open(t, dsn, Config{})
	b := follow(t, open(t, dsn, Config{}), eventbus.Config{})
	s := b.Subscribe(events.Filter{})
	defer s.Close()
	big := strings.Repeat("x", 64<<10)
	e := update("n", 0)
	e.State.LastError = big
	w.Append(e)()
	if got := collect(t, s, 1)[0]; got.State.LastError != big {
		t.Fatalf("last_error of %d bytes, want %d", len(got.State.LastError), len(big))
	}
}

// TestPruneAsWritten: writers keep the table near Keep events by
// themselves.
func TestPruneAsWritten(t *testing.T) {
	dsn := migrated(t)
	w := open(t, dsn, Config{Keep: 100})
	for i := range 1000 {
		w.Append(update("n", i))()
	}
	if got := len(tableIDs(t, dsn)); got > 110 || got < 100 {
		t.Fatalf("table holds %d events after 1,000 with Keep 100", got)
	}
}

// TestCloseWritesQueued: Close commits what is queued.
func TestCloseWritesQueued(t *testing.T) {
	dsn := migrated(t)
	w, err := Open(context.Background(), Config{DSN: dsn, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.Append(update("n", i))
	}
	w.Close()
	if got := len(tableIDs(t, dsn)); got != 50 {
		t.Fatalf("after Close the table holds %d events, want 50", got)
	}
	if wait := w.Append(update("n", 50)); wait != nil {
		t.Fatal("append after Close returned a wait")
	}
}

// TestLaggingFollower: a follower whose events were pruned before it read
// them cuts its readers off, and their resume is a reset, never a silent
// gap.
func TestLaggingFollower(t *testing.T) {
	dsn := migrated(t)
	w := open(t, dsn, Config{Keep: 10})
	lagging := open(t, dsn, Config{})
	b, err := lagging.NewBroker(context.Background(), eventbus.Config{}) // not following
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w.Append(update("n", 0))()
	if err := lagging.CatchUp(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	sub := b.Subscribe(events.Filter{})
	pos := sub.Start()
	for i := range 50 {
		w.Append(update("n", i+1))()
	}
	if err := w.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lagging.CatchUp(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	evs, _, err := sub.Take(nil)
	if !errors.Is(err, eventbus.ErrOverflow) || len(evs) != 1 || evs[0].Type != events.TypeOverflow || evs[0].ID != pos {
		t.Fatalf("reader of a lagging follower got %v, %v; want one overflow at %d", ids(evs), err, pos)
	}
	if s, ok := b.Resume(events.Filter{}, pos); ok {
		s.Close()
		t.Fatal("resume across pruned events: ok, want a reset")
	}
	s, ok := b.Resume(events.Filter{}, b.Stats().LastID)
	defer s.Close()
	if !ok {
		t.Fatal("resume from the last event after the gap: reset")
	}
}

// TestProjectsCarried: the node's owner and lessee, which the stream's JSON
// leaves out, reach other processes' brokers, so that project-scoped
// streams there select the same events.
func TestProjectsCarried(t *testing.T) {
	dsn := migrated(t)
	w := open(t, dsn, Config{})
	b := follow(t, open(t, dsn, Config{}), eventbus.Config{})
	p2 := b.Subscribe(events.Filter{Project: "p2", Types: []string{events.TypeUpdated, events.TypeHistory}})
	defer p2.Close()
	w.Append(events.Event{Type: events.TypeUpdated, Node: "moved",
		State: &events.NodeState{ProvisionState: "active", Owner: "p2", Lessee: "p3"}, Previous: &events.NodeState{ProvisionState: "active", Owner: "p1"}})()
	w.Append(events.Event{Type: events.TypeUpdated, Node: "other", Changed: []string{events.FieldFault},
		State: &events.NodeState{Owner: "p9"}, Previous: &events.NodeState{Owner: "p9"}})()
	w.Append(events.Event{Type: events.TypeHistory, Node: "moved", History: &events.History{Event: "x", Owner: "p2"}})()
	got := collect(t, p2, 2)
	if u := got[0]; u.Node != "moved" || u.State.Owner != "p2" || u.State.Lessee != "p3" || u.Previous.Owner != "p1" {
		t.Fatalf("update: %+v %+v %+v", u, u.State, u.Previous)
	}
	if h := got[1]; h.Type != events.TypeHistory || h.History.Owner != "p2" {
		t.Fatalf("history: %+v", h)
	}
}
