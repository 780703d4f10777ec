package bmcemu

import (
	"context"
	"testing"
	"time"
)

// Latency with jitter is drawn from [Latency, Latency+LatencyJitter), and
// both ends of the range are reached.
func TestLatencyJitterRange(t *testing.T) {
	e, err := Start(context.Background(), Config{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	k := Knobs{Latency: time.Second, LatencyJitter: 2 * time.Second}
	lo, hi := time.Hour, time.Duration(0)
	for range 2000 {
		d := e.latency(k)
		if d < time.Second || d >= 3*time.Second {
			t.Fatalf("latency %v outside [1s, 3s)", d)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > 1100*time.Millisecond || hi < 2900*time.Millisecond {
		t.Fatalf("2000 draws span only %v..%v", lo, hi)
	}
	if d := e.latency(Knobs{Latency: 50 * time.Millisecond}); d != 50*time.Millisecond {
		t.Fatalf("without jitter: %v", d)
	}
}
