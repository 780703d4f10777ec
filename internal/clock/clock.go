// Package clock holds the one context-aware sleep the rest of Anvil uses.
package clock

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever is first. It returns nil when
// d passed and ctx.Err() when ctx ended first (also when d <= 0 and ctx has
// already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
