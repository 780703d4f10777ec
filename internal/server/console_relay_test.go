package server

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// TestAdvertised: the relay's base URL other processes dial.
func TestAdvertised(t *testing.T) {
	host, _ := os.Hostname()
	cases := []struct {
		name, advertise, addr string
		tls                   bool
		want                  string
	}{
		{"bound loopback", "", "127.0.0.1:6386", false, "ws://127.0.0.1:6386"},
		{"bound under TLS", "", "127.0.0.1:6386", true, "wss://127.0.0.1:6386"},
		{"unspecified address takes the host name", "", "0.0.0.0:6386", false, "ws://" + net.JoinHostPort(host, "6386")},
		{"advertised http", "http://c1.example:6386/", "0.0.0.0:6386", false, "ws://c1.example:6386"},
		{"advertised https with a path", "https://c1.example/anvil?x=1", "0.0.0.0:6386", true, "wss://c1.example"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", c.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := advertised(c.advertise, addr, c.tls); got != c.want {
				t.Errorf("advertised(%q, %s, %t) = %q, want %q", c.advertise, c.addr, c.tls, got, c.want)
			}
		})
	}
}

// TestMachineNameIsAllowed: a listener bound to every address accepts the
// Host it advertises to other processes (the machine's name).
func TestMachineNameIsAllowed(t *testing.T) {
	name, ok := machineName("0.0.0.0")
	if !ok {
		t.Skip("no host name")
	}
	if _, ok := machineName("127.0.0.1"); ok {
		t.Error("a specific address took the machine's name")
	}
	for _, listen := range []string{"0.0.0.0:6385", "[::]:6385", ":6385"} {
		h, err := guard(t.Context(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }),
			Config{Listen: listen}, "", slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = net.JoinHostPort(name, "6385")
		h.ServeHTTP(rec, req)
		if rec.Code != 204 {
			t.Errorf("--listen %s: Host %s answered %d", listen, req.Host, rec.Code)
		}
	}
}

func TestCheckAdvertise(t *testing.T) {
	for _, ok := range []string{"", "http://127.0.0.1:6386", "https://c1.example"} {
		if err := checkAdvertise(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"c1:6386", "ftp://c1", "http://", "http://u:p@c1"} {
		if err := checkAdvertise(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
