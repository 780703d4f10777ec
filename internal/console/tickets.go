package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Tickets are the one-time passes by which an API process attaches a
// viewer to a console held by another process (the conductor that owns the
// node): the owner mints one for a node when asked through the database
// (internal/workq, which only Anvil's processes reach) and answers it with
// its address; the API process presents it once, within TicketTTL, when it
// dials the owner's relay endpoint. Tickets are 256 random bits, kept
// hashed, good for one node and one use. Safe for concurrent use.
type Tickets struct {
	mu   sync.Mutex
	live map[[32]byte]ticket
	now  func() time.Time
}

type ticket struct {
	node    string
	expires time.Time
}

// TicketTTL is how long a ticket may wait to be presented.
const TicketTTL = 30 * time.Second

// maxTickets bounds the tickets waiting at once (the oldest are dropped
// first when more are minted).
const maxTickets = 10000

// NewTickets returns an empty ticket book; now is the clock (time.Now when
// nil).
func NewTickets(now func() time.Time) *Tickets {
	if now == nil {
		now = time.Now
	}
	return &Tickets{live: map[[32]byte]ticket{}, now: now}
}

// Mint returns a new ticket for node.
func (t *Tickets) Mint(node string) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	s := base64.RawURLEncoding.EncodeToString(b[:])
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.live) >= maxTickets {
		t.dropExpired(now)
	}
	for len(t.live) >= maxTickets {
		var oldest [32]byte
		first := true
		for k, v := range t.live {
			if first || v.expires.Before(t.live[oldest].expires) {
				oldest, first = k, false
			}
		}
		delete(t.live, oldest)
	}
	t.live[sha256.Sum256([]byte(s))] = ticket{node: node, expires: now.Add(TicketTTL)}
	return s
}

// Redeem reports whether s is a live ticket for node, and spends it (a
// ticket presented for another node is spent too). Tickets never
// presented stay until the book is full, then the expired and oldest go.
func (t *Tickets) Redeem(s, node string) bool {
	if s == "" {
		return false
	}
	k := sha256.Sum256([]byte(s))
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.live[k]
	delete(t.live, k)
	return ok && tk.node == node && now.Before(tk.expires)
}

func (t *Tickets) dropExpired(now time.Time) {
	for k, v := range t.live {
		if !now.Before(v.expires) {
			delete(t.live, k)
		}
	}
}
