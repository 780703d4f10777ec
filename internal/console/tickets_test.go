package console

import (
	"testing"
	"time"
)

// TestTickets: a ticket admits once, for its node, within TicketTTL; the
// book stays bounded.
func TestTickets(t *testing.T) {
	now := time.Unix(1000, 0)
	tk := NewTickets(func() time.Time { return now })
	a, b := tk.Mint("n1"), tk.Mint("n1")
	if a == b || len(a) < 40 {
		t.Fatalf("tickets %q and %q", a, b)
	}
	if tk.Redeem("", "n1") || tk.Redeem("forged", "n1") {
		t.Error("an empty or forged ticket admitted")
	}
	if !tk.Redeem(a, "n1") {
		t.Fatal("a fresh ticket refused")
	}
	if tk.Redeem(a, "n1") {
		t.Error("a ticket admitted twice")
	}
	if tk.Redeem(b, "n2") || tk.Redeem(b, "n1") {
		t.Error("a ticket admitted for another node, or after it was presented for one")
	}
	c := tk.Mint("n1")
	now = now.Add(TicketTTL)
	if tk.Redeem(c, "n1") {
		t.Error("an expired ticket admitted")
	}
	for range maxTickets + 10 {
		tk.Mint("n3")
	}
	tk.mu.Lock()
	n := len(tk.live)
	tk.mu.Unlock()
	if n > maxTickets {
		t.Errorf("%d tickets kept, bound %d", n, maxTickets)
	}
}
