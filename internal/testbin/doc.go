// Package testbin is the harness the end-to-end test packages share:
// building the anvil binary once per test binary (Main), running processes
// that are stopped and whose output is logged when a test fails (Start),
// `anvil serve` on a free loopback port with a throwaway database (Serve,
// ServeOn), one JSON request to the API (Call, MustCall, GetNode), waiting
// for a node to settle (WaitState), a goroutine-safe output buffer and free
// loopback ports, and the one rule for a missing prerequisite (Need for a
// tool, Missing for anything else): fail under CI, skip otherwise. It is imported by tests only; everything it starts binds
// to 127.0.0.1.
package testbin
