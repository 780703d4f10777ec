package eventlog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/pkg/events"
)

// BenchmarkFanOut measures events per second from writers' Append (each
// writer waiting for its commit, as the store decorator does) to a reader
// of a third process's broker: writers processes × goroutines each.
//
//	go test ./internal/eventlog -run '^$' -bench FanOut -benchtime 20000x
func BenchmarkFanOut(b *testing.B) {
	for _, c := range []struct{ procs, goroutines int }{{1, 1}, {2, 8}, {2, 64}} {
		b.Run(fmt.Sprintf("writers=%dx%d", c.procs, c.goroutines), func(b *testing.B) {
			dsn := migrated(b)
			var writers []*Log
			for range c.procs {
				writers = append(writers, open(b, dsn, Config{Keep: 1 << 30}))
			}
			per := max(b.N/(c.procs*c.goroutines), 1)
			total := per * c.procs * c.goroutines
			br := follow(b, open(b, dsn, Config{}), eventbus.Config{Buffer: 10000, SubscriberBuffer: total})
			sub := br.Subscribe(events.Filter{})
			defer sub.Close()
			e := update("n", 0)
			e.Previous = e.State
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, l := range writers {
				for range c.goroutines {
					wg.Go(func() {
						for range per {
							if wait := l.Append(e); wait != nil { // nil once closed (a failed run)
								wait()
							}
						}
					})
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for got := 0; got < total; got++ {
				if _, err := sub.Next(ctx); err != nil {
					b.Fatalf("after %d of %d events: %v", got, total, err)
				}
			}
			elapsed := time.Since(start)
			wg.Wait()
			b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
		})
	}
}
