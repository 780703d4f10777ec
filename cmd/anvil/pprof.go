package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
)

// startPprof serves Go's profiles on their own listener, never on the API's.
func startPprof(addr string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(stderr, "anvil: profiles on http://%s/debug/pprof/\n", ln.Addr())
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}
