package conductor

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
)

// TestErrorText: work cut short by the conductor stopping reads as plain
// words in last_error, however deep the cancellation is wrapped; other
// errors keep their text.
func TestErrorText(t *testing.T) {
	c := &Conductor{cfg: Config{Host: "c1"}}
	plain := "interrupted: conductor c1 stopped before the operation finished"
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"canceled", context.Canceled, plain},
		{"wrapped", fmt.Errorf("step write_image: %w", context.Canceled), plain},
		{"an HTTP call", &url.Error{Op: "Get", URL: "http://127.0.0.1:9999/v1/commands", Err: context.Canceled}, plain},
		{"other", errors.New("disk not found"), "disk not found"},
		{"deadline keeps its text", fmt.Errorf("power on: %w", context.DeadlineExceeded), "power on: context deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.errorText(tc.err); got != tc.want {
				t.Errorf("errorText = %q, want %q", got, tc.want)
			}
		})
	}
}
