package auth

import (
	"context"
	"net"
	"runtime"
	"sync"
	"time"
)

// Failed http_basic attempts are counted per user and address, per
// address and per user, in fixed windows. Once a count reaches its limit,
// further attempts it covers are refused 429 without running bcrypt until
// the window ends; credentials already proven right (the cache of
// successes) still pass, so a user who logged in before is not locked out
// by someone guessing its password. bcrypt itself runs at most
// bcryptSlots at a time, leaving the other cores to requests whose
// credentials are cached.
const (
	failureWindow = time.Minute
	pairFailures  = 5   // one user from one address
	addrFailures  = 30  // any users from one address
	userFailures  = 100 // one user from any addresses
	// maxTracked bounds the counters kept; beyond, expired ones are
	// dropped, then arbitrary ones.
	maxTracked = 10000
)

// bcryptSlots is how many bcrypt checks run at once: half the cores.
func bcryptSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// failures counts failed attempts by key.
type failures struct {
	window                   time.Duration
	pairMax, addrMax, usrMax int
	mu                       sync.Mutex
	counts                   map[string]*failCount
}

type failCount struct {
	n     int
	start time.Time
}

func newFailures() *failures {
	return &failures{window: failureWindow, pairMax: pairFailures, addrMax: addrFailures, usrMax: userFailures,
		counts: map[string]*failCount{}}
}

// keys are the counters of an attempt with their limits.
func (f *failures) keys(user, addr string) [3]struct {
	key string
	max int
} {
	return [3]struct {
		key string
		max int
	}{{"p\x00" + user + "\x00" + addr, f.pairMax}, {"a\x00" + addr, f.addrMax}, {"u\x00" + user, f.usrMax}}
}

// blocked reports whether an attempt of user from addr is refused at now.
func (f *failures) blocked(user, addr string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys(user, addr) {
		if c, ok := f.counts[k.key]; ok && now.Sub(c.start) < f.window && c.n >= k.max {
			return true
		}
	}
	return false
}

// fail counts a failed attempt; limited reports whether a count just
// reached its limit.
func (f *failures) fail(user, addr string, now time.Time) (limited bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys(user, addr) {
		c, ok := f.counts[k.key]
		if !ok || now.Sub(c.start) >= f.window {
			f.room(now)
			c = &failCount{start: now}
			f.counts[k.key] = c
		}
		c.n++
		limited = limited || c.n == k.max
	}
	return limited
}

// succeed forgets the pair's failures: the user got in from there.
func (f *failures) succeed(user, addr string) {
	f.mu.Lock()
	delete(f.counts, f.keys(user, addr)[0].key)
	f.mu.Unlock()
}

// room makes room for one more counter; f.mu is held.
func (f *failures) room(now time.Time) {
	if len(f.counts) < maxTracked {
		return
	}
	for k, c := range f.counts {
		if now.Sub(c.start) >= f.window {
			delete(f.counts, k)
		}
	}
	for k := range f.counts {
		if len(f.counts) < maxTracked {
			return
		}
		delete(f.counts, k)
	}
}

// slots bounds concurrent bcrypt checks.
type slots chan struct{}

// acquire takes a slot, or fails when ctx ends first.
func (s slots) acquire(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }

// clientAddr is a request's client address without its port.
func clientAddr(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}
