package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestBatchCanceledRequestIsNotAccepted: a request that failed inside the
// HTTP client with "context canceled" (seen at 10,000 nodes with nothing
// cancelled) is reported as failed — it was not accepted — and only a
// wait cut short after the API accepted the request is "interrupted".
func TestBatchCanceledRequestIsNotAccepted(t *testing.T) {
	var stdout, stderr bytes.Buffer
	a := &app{env: Env{Stdout: &stdout, Stderr: &stderr, IsTerminal: func(io.Writer) bool { return false }}}
	act := action{name: "manage", do: func(ctx context.Context, _ *Client, node string) error {
		if node == "lost" {
			return fmt.Errorf("PUT /v1/nodes/%s/states/provision: %w", node, context.Canceled)
		}
		return nil
	}}
	targets := []target{{ident: "lost", show: "lost"}, {ident: "sent", show: "sent"}}
	results := a.runBatch(t.Context(), nil, act, targets, 1, false)
	results[1].err = context.Canceled // its wait, interrupted
	err := a.report(&batchOpts{out: outputOpts{format: fmtValue, columns: []string{"Node", "Result"}}}, act, targets, results)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("report: %v, want exit status 1", err)
	}
	if got, want := stdout.String(), "lost failed\nsent interrupted\n"; got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stderr.String(), "lost") {
		t.Errorf("progress does not name the failed node: %q", stderr.String())
	}
}
