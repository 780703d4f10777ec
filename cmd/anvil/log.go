package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/anvil-metal/anvil/internal/secret"
)

// parseLogLevel reads a --log-level value.
func parseLogLevel(s string) (slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(s)); err != nil {
		return lvl, fmt.Errorf("--log-level: %w", err)
	}
	return lvl, nil
}

// newLogger is every command's log: text lines on w at lvl and up, with
// secrets masked (secret.Handler) whatever a caller logs.
func newLogger(w io.Writer, lvl slog.Level) *slog.Logger {
	return slog.New(secret.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})))
}
