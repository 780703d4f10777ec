package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRingTail(t *testing.T) {
	for _, tc := range []struct {
		cap    int
		writes []string
		n      int
		want   string
	}{
		{cap: 8, writes: []string{"abc"}, want: "abc"},
		{cap: 8, writes: []string{"abc", "defgh"}, want: "abcdefgh"},
		{cap: 8, writes: []string{"abcdef", "ghij"}, want: "cdefghij"},
		{cap: 8, writes: []string{"abcdef", "ghij", "kl"}, want: "efghijkl"},
		{cap: 8, writes: []string{"0123456789abcdefXYZ"}, want: "bcdefXYZ"},
		{cap: 8, writes: []string{"abcdef", "ghij", "kl"}, n: 3, want: "jkl"},
		{cap: 4, writes: []string{"ab", "cd", "ef", "g"}, n: 3, want: "efg"},
		{cap: 4, writes: []string{"ab"}, n: 10, want: "ab"},
	} {
		r := ringBuf{cap: tc.cap}
		for _, w := range tc.writes {
			r.write([]byte(w))
		}
		if got := string(r.tail(tc.n)); got != tc.want {
			t.Errorf("cap %d writes %q tail(%d) = %q, want %q", tc.cap, tc.writes, tc.n, got, tc.want)
		}
		if r.size() > tc.cap {
			t.Errorf("size %d over cap %d", r.size(), tc.cap)
		}
	}
}

// fakeConsole is a console whose output the test writes and whose input
// the test reads.
type fakeConsole struct {
	outR   *io.PipeReader // the service reads the console's output here
	outW   *io.PipeWriter // the test writes output here
	mu     sync.Mutex
	in     bytes.Buffer
	typed  chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newFakeConsole() *fakeConsole {
	r, w := io.Pipe()
	return &fakeConsole{outR: r, outW: w, typed: make(chan struct{}, 100), closed: make(chan struct{})}
}

func (f *fakeConsole) Read(p []byte) (int, error) { return f.outR.Read(p) }
func (f *fakeConsole) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.in.Write(p)
	f.mu.Unlock()
	select {
	case f.typed <- struct{}{}:
	default:
	}
	return len(p), nil
}
func (f *fakeConsole) Close() error {
	f.once.Do(func() { close(f.closed); _ = f.outR.Close() })
	return nil
}
func (f *fakeConsole) input() string { f.mu.Lock(); defer f.mu.Unlock(); return f.in.String() }

// opener hands out the consoles sent on ch, one per opening.
func opener(ch <-chan *fakeConsole) Opener {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		select {
		case f := <-ch:
			return f, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// readUntil reads v's output until it contains want.
func readUntil(t *testing.T, v *Viewer, want string) string {
	t.Helper()
	var got strings.Builder
	timeout := time.After(10 * time.Second)
	for !strings.Contains(got.String(), want) {
		select {
		case p := <-v.Output():
			got.Write(p)
		case <-v.Done():
			t.Fatalf("viewer ended (%q) before %q; got %q", v.Reason(), want, got.String())
		case <-timeout:
			t.Fatalf("no %q in the output; got %q", want, got.String())
		}
	}
	return got.String()
}

func waitTyped(t *testing.T, f *fakeConsole, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(f.input(), want) {
		select {
		case <-f.typed:
		case <-timeout:
			t.Fatalf("console input %q, want %q", f.input(), want)
		}
	}
}

// attached attaches once the session has its source (Hold connects in
// the background).
func attached(t *testing.T, s *Service, node string, replay int) *Viewer {
	t.Helper()
	v, err := s.Attach(node, replay)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestViewersFirstReadWriteOthersReadOnly(t *testing.T) {
	s := New(Config{})
	defer s.Close(context.Background())
	ch := make(chan *fakeConsole, 1)
	f := newFakeConsole()
	ch <- f
	if !s.Hold("n1", "console enabled", opener(ch)) {
		t.Fatal("Hold did not start a session")
	}
	if s.Hold("n1", "again", opener(ch)) {
		t.Fatal("a second Hold started another session")
	}
	a := attached(t, s, "n1", 0)
	b := attached(t, s, "n1", 0)
	if !a.ReadWrite() || b.ReadWrite() {
		t.Fatalf("first viewer read-write %v, second %v; want true, false", a.ReadWrite(), b.ReadWrite())
	}
	go f.outW.Write([]byte("login: "))
	readUntil(t, a, "login: ")
	readUntil(t, b, "login: ")
	// The read-write viewer types (the source may still be connecting).
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the console never connected")
		}
		_, err := a.Write([]byte("root\r"))
		if err == nil {
			break
		}
		if !errors.Is(err, ErrOffline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the session is connecting: poll
	}
	waitTyped(t, f, "root\r")
	if _, err := b.Write([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only viewer's write: %v, want ErrReadOnly", err)
	}
	if strings.Contains(f.input(), "x") {
		t.Fatal("a read-only viewer's keystroke reached the console")
	}
	select {
	case <-b.Promoted():
		t.Fatal("a read-only viewer was told it holds the keyboard")
	default:
	}
	a.Close()
	if !b.ReadWrite() {
		t.Fatal("the keyboard did not pass to the remaining viewer")
	}
	select {
	case <-b.Promoted(): // the WebSocket tells its client at once
	default:
		t.Fatal("the viewer given the keyboard was not told")
	}
	if _, err := b.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	waitTyped(t, f, "y")
	if got, _ := s.Log("n1", 0); string(got) != "login: " {
		t.Fatalf("log %q", got)
	}
}

func TestStopEndsViewersAndClosesSource(t *testing.T) {
	s := New(Config{})
	ch := make(chan *fakeConsole, 1)
	f := newFakeConsole()
	ch <- f
	s.Hold("n1", "deploying", opener(ch))
	v := attached(t, s, "n1", 0)
	go f.outW.Write([]byte("boot"))
	readUntil(t, v, "boot")
	s.Stop("n1", "the console was disabled")
	select {
	case <-v.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("viewer not ended")
	}
	if v.Reason() != "the console was disabled" {
		t.Fatalf("reason %q", v.Reason())
	}
	select {
	case <-f.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("source not closed")
	}
	if _, err := s.Attach("n1", 0); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("attach after stop: %v", err)
	}
	if got, ok := s.Log("n1", 0); !ok || string(got) != "boot" {
		t.Fatalf("log after stop %q %v, want the output kept", got, ok)
	}
}

func TestReplayAndReconnect(t *testing.T) {
	s := New(Config{RetryMin: time.Millisecond})
	defer s.Close(context.Background())
	ch := make(chan *fakeConsole, 2)
	f1, f2 := newFakeConsole(), newFakeConsole()
	ch <- f1
	s.Hold("n1", "cleaning", opener(ch))
	v := attached(t, s, "n1", 0)
	go func() { f1.outW.Write([]byte("first ")); f1.outW.Close() }()
	readUntil(t, v, "first ")
	ch <- f2 // the session reopens after the EOF
	go f2.outW.Write([]byte("second"))
	readUntil(t, v, "second")
	w := attached(t, s, "n1", 9)
	if got := readUntil(t, w, "second"); got != "st second" {
		t.Fatalf("replay %q, want the last 9 bytes", got)
	}
}

func TestSlowViewerIsCutOff(t *testing.T) {
	s := New(Config{ViewerQueue: 2})
	defer s.Close(context.Background())
	ch := make(chan *fakeConsole, 1)
	f := newFakeConsole()
	ch <- f
	s.Hold("n1", "x", opener(ch))
	slow := attached(t, s, "n1", 0)
	for i := range 3 {
		f.outW.Write([]byte(fmt.Sprint(i))) // a pipe: each write is one read
	}
	select {
	case <-slow.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("slow viewer not cut off")
	}
	if !strings.Contains(slow.Reason(), "keep up") {
		t.Fatalf("reason %q", slow.Reason())
	}
}

func TestGlobalBound(t *testing.T) {
	s := New(Config{PerNode: 100, Total: 250})
	s.mu.Lock()
	s.held["held"] = &session{}
	s.record("held", bytes.Repeat([]byte("h"), 100))
	for i := range 5 {
		s.record(fmt.Sprint("old", i), bytes.Repeat([]byte("o"), 150))
	}
	s.mu.Unlock()
	if s.LogBytes() > 250 {
		t.Fatalf("total %d over the bound", s.LogBytes())
	}
	if _, ok := s.Log("held", 0); !ok {
		t.Fatal("the held node's log was dropped before unheld ones")
	}
	if _, ok := s.Log("old4", 0); !ok {
		t.Fatal("the newest log was dropped")
	}
	if _, ok := s.Log("old0", 0); ok {
		t.Fatal("the oldest unheld log was kept")
	}
	got, _ := s.Log("old4", 0)
	if len(got) != 100 {
		t.Fatalf("per-node bound: %d bytes kept", len(got))
	}
}

type fakeResolver struct {
	mu         sync.Mutex
	recordOnly bool
	want       map[string]bool
	ch         chan *fakeConsole
}

func (r *fakeResolver) ConsoleDecision(_ context.Context, node string) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.want[node] {
		return Decision{Hold: true, Attachable: !r.recordOnly, Open: opener(r.ch), Reason: "wanted"}, nil
	}
	return Decision{Reason: "the console was disabled"}, nil
}

func (r *fakeResolver) ConsoleCandidates(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n, w := range r.want {
		if w {
			out = append(out, n)
		}
	}
	return out, nil
}

func TestControllerFollowsDecisions(t *testing.T) {
	s := New(Config{})
	r := &fakeResolver{want: map[string]bool{"a": true}, ch: make(chan *fakeConsole, 2)}
	c := NewController(s, r, time.Hour, nil)
	ctx := context.Background()
	c.Sweep(ctx)
	if !s.Held("a") || s.Held("b") {
		t.Fatalf("held %v after the sweep", s.HeldNodes())
	}
	r.mu.Lock()
	r.want["a"], r.want["b"] = false, true
	r.mu.Unlock()
	c.Decide(ctx, "a")
	c.Decide(ctx, "b")
	if s.Held("a") || !s.Held("b") {
		t.Fatalf("held %v after the decisions", s.HeldNodes())
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(rctx); close(done) }()
	cancel()
	<-done
	if len(s.HeldNodes()) != 0 {
		t.Fatalf("held %v after Run ended", s.HeldNodes())
	}
}

func TestTCPConsole(t *testing.T) {
	s := New(Config{})
	ch := make(chan *fakeConsole, 1)
	f := newFakeConsole()
	ch <- f
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s.HoldListen("n1", "enabled", opener(ch), addr)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(f.input(), "hi"); {
		if time.Now().After(deadline) {
			t.Fatalf("typed %q", f.input())
		}
		c.Write([]byte("hi"))             // dropped until the BMC side is connected
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	go f.outW.Write([]byte("out"))
	buf := make([]byte, 3)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "out" {
		t.Fatalf("read %q %v", buf, err)
	}
	s.Stop("n1", "disabled")
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the TCP console stayed open after Stop")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the TCP port still listens after Stop")
	}
}

// TestDisabledWhileRecorded: a console disabled while the node's state is
// still recorded ends its viewers but keeps the BMC session.
func TestDisabledWhileRecorded(t *testing.T) {
	s := New(Config{})
	defer s.Close(context.Background())
	r := &fakeResolver{want: map[string]bool{"a": true}, ch: make(chan *fakeConsole, 1)}
	r.ch <- newFakeConsole()
	c := NewController(s, r, time.Hour, nil)
	c.Decide(context.Background(), "a")
	v := attached(t, s, "a", 0)
	r.mu.Lock()
	r.recordOnly = true
	r.mu.Unlock()
	c.Decide(context.Background(), "a")
	select {
	case <-v.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the viewer outlived the console's disabling")
	}
	if !s.Held("a") {
		t.Fatal("the recording stopped")
	}
}
