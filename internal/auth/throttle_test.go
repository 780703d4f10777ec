package auth

import (
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// throttled is an http_basic checker over users u, v, w (password
// "<user>-pw") with a settable clock and a counted bcrypt.
type throttled struct {
	*basic
	clock  time.Time
	bcrypt atomic.Int64
}

func newThrottled(t *testing.T) *throttled {
	t.Helper()
	var b strings.Builder
	for _, u := range []string{"u", "v", "w"} {
		h, err := bcrypt.GenerateFromPassword([]byte(u+"-pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(u + ":" + string(h) + "\n")
	}
	p := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	th := &throttled{basic: newBasic(&userFile{path: p}, slog.New(slog.NewTextHandler(io.Discard, nil))),
		clock: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	th.now = func() time.Time { return th.clock }
	th.compare = func(hash, pass []byte) error {
		th.bcrypt.Add(1)
		return bcrypt.CompareHashAndPassword(hash, pass)
	}
	return th
}

// try checks user:pass from addr and returns the status (0: granted).
func (th *throttled) try(user, pass, addr string) int {
	r := httptest.NewRequest(http.MethodGet, "/v1/nodes", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	_, status, _ := th.grant(r)
	return status
}

// TestFailedAttemptsLimited: wrong passwords are refused 429 without
// bcrypt once a user and address, an address or a user has failed too
// often in the window, while other users and addresses, and credentials
// already proven right, are served as before (issue 21: 16 threads of
// wrong passwords raised everyone's p50 from 3 to 264 ms).
func TestFailedAttemptsLimited(t *testing.T) {
	type attempt struct {
		user, pass, addr string
		want             int
		bcrypt           bool // whether bcrypt runs
	}
	wrong := func(user, addr string, n int) []attempt { // n distinct guesses
		out := make([]attempt, n)
		for i := range out {
			out[i] = attempt{user, "nope-" + strconv.Itoa(i), addr, http.StatusUnauthorized, user != "nobody"}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		before  []attempt // run first, each checked
		advance time.Duration
		then    attempt
	}{
		{"pair: the attempt after the limit", wrong("u", "10.0.0.1", pairFailures), 0,
			attempt{"u", "nope", "10.0.0.1", http.StatusTooManyRequests, false}},
		{"pair: even the right password", wrong("u", "10.0.0.1", pairFailures), 0,
			attempt{"u", "u-pw", "10.0.0.1", http.StatusTooManyRequests, false}},
		{"pair: the user from another address", wrong("u", "10.0.0.1", pairFailures), 0,
			attempt{"u", "u-pw", "10.0.0.2", 0, true}},
		{"pair: another user from the address", wrong("u", "10.0.0.1", pairFailures), 0,
			attempt{"v", "v-pw", "10.0.0.1", 0, true}},
		{"pair: after the window", wrong("u", "10.0.0.1", pairFailures), failureWindow,
			attempt{"u", "nope", "10.0.0.1", http.StatusUnauthorized, true}},
		{"pair: a repeated guess is no new guess", append(wrong("u", "10.0.0.1", pairFailures-1), wrong("u", "10.0.0.1", 1)[0]), 0,
			attempt{"u", "nope", "10.0.0.1", http.StatusUnauthorized, true}},
		{"pair: a repeated guess after the limit costs no bcrypt", wrong("u", "10.0.0.1", pairFailures), 0,
			attempt{"u", "nope-0", "10.0.0.1", http.StatusUnauthorized, false}},
		{"pair: unknown users count too", wrong("nobody", "10.0.0.1", pairFailures), 0,
			attempt{"nobody", "x", "10.0.0.1", http.StatusTooManyRequests, false}},
		{"pair: credentials proven right still pass",
			append([]attempt{{"u", "u-pw", "10.0.0.1", 0, true}}, wrong("u", "10.0.0.1", pairFailures)...), 0,
			attempt{"u", "u-pw", "10.0.0.1", 0, false}},
		{"address: many users", func() []attempt {
			var out []attempt
			for i := range addrFailures {
				out = append(out, attempt{"user" + strconv.Itoa(i), "x", "10.0.0.3", http.StatusUnauthorized, false})
			}
			return out
		}(), 0, attempt{"w", "nope", "10.0.0.3", http.StatusTooManyRequests, false}},
		{"user: many addresses", func() []attempt {
			var out []attempt
			for i := range userFailures {
				out = append(out, attempt{"w", "nope-" + strconv.Itoa(i), "10.1." + strconv.Itoa(i/10) + "." + strconv.Itoa(i%10), http.StatusUnauthorized, true})
			}
			return out
		}(), 0, attempt{"w", "nope", "10.2.0.1", http.StatusTooManyRequests, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newThrottled(t)
			for i, a := range tc.before {
				if got := th.try(a.user, a.pass, a.addr); got != a.want {
					t.Fatalf("attempt %d (%s from %s): %d, want %d", i, a.user, a.addr, got, a.want)
				}
			}
			th.clock = th.clock.Add(tc.advance)
			ran := th.bcrypt.Load()
			a := tc.then
			if got := th.try(a.user, a.pass, a.addr); got != a.want {
				t.Fatalf("%s from %s: %d, want %d", a.user, a.addr, got, a.want)
			}
			if did := th.bcrypt.Load() > ran; did != a.bcrypt {
				t.Fatalf("bcrypt ran: %v, want %v", did, a.bcrypt)
			}
		})
	}
}

// TestBcryptBounded: at most bcryptSlots checks run bcrypt at once, and
// credentials proven right are answered while every slot is busy.
func TestBcryptBounded(t *testing.T) {
	th := newThrottled(t)
	if got := th.try("v", "v-pw", "10.0.0.9"); got != 0 {
		t.Fatalf("first login: %d", got)
	}
	var running, peak atomic.Int64
	gate := make(chan struct{})
	started := make(chan struct{}, 16)
	th.compare = func(hash, pass []byte) error {
		started <- struct{}{}
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-gate
		running.Add(-1)
		return bcrypt.ErrMismatchedHashAndPassword
	}
	const attackers = 8
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th.try("u", "guess-"+strconv.Itoa(i), "10.0.1."+strconv.Itoa(i))
		}()
	}
	for range bcryptSlots() { // every slot taken
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d bcrypt checks running, want %d", running.Load(), bcryptSlots())
		}
	}
	if got := th.try("v", "v-pw", "10.0.0.9"); got != 0 {
		t.Fatalf("cached credentials while bcrypt is busy: %d", got)
	}
	close(gate)
	wg.Wait()
	if p := peak.Load(); p > int64(bcryptSlots()) {
		t.Fatalf("%d bcrypt checks ran at once, want at most %d", p, bcryptSlots())
	}
}

// TestTooManyAnswer: the 429 carries Ironic's auth error body and a
// Retry-After.
func TestTooManyAnswer(t *testing.T) {
	rec := httptest.NewRecorder()
	writeAuthError(rec, http.StatusTooManyRequests, "Too many failed authentication attempts: retry later", Realm)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || rec.Header().Get("WWW-Authenticate") != "" ||
		!strings.Contains(rec.Body.String(), `"code": 429`) && !strings.Contains(rec.Body.String(), `"code":429`) {
		t.Fatalf("429: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
}
