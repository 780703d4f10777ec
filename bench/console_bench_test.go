package bench

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// consoleNode creates an ipmi node whose ipmi-sol console (ipmi_sim's SOL
// to a serial peer) is enabled on s, and returns the serial peer and the
// console's WebSocket URL.
func consoleNode(b *testing.B, s *server) (*ipmisim.Serial, string) {
	serial := ipmisim.NewSerial(b, "")
	port := ipmisim.StartSOL(b, "anvil-bench", "sol-pw-123", "tcp:"+serial.Addr)
	ctx := context.Background()
	code, body, err := s.do(ctx, "POST", "/v1/nodes", map[string]any{"driver": "ipmi", "console_interface": "ipmi-sol",
		"uuid": "0c0f2a8e-5b6d-4e4f-9a7b-3c2d1e0f9a8b", "driver_info": map[string]any{
			"ipmi_address": "127.0.0.1", "ipmi_port": port, "ipmi_username": ipmisim.User, "ipmi_password": "sol-pw-123"}})
	if err != nil || code != http.StatusCreated {
		b.Fatalf("create the node: %d %s %v", code, body, err)
	}
	path := "/v1/nodes/0c0f2a8e-5b6d-4e4f-9a7b-3c2d1e0f9a8b"
	if code, body, err := s.do(ctx, "PUT", path+"/states/console", map[string]any{"enabled": true}); err != nil || code != http.StatusAccepted {
		b.Fatalf("enable the console: %d %s %v", code, body, err)
	}
	return serial, strings.Replace(s.base, "http://", "ws://", 1) + path + "/console/ws"
}

// dialConsole dials url until the console is held (503 before), 30 s at
// most (a conductor process picks an enabled console up at its sweep).
func dialConsole(b *testing.B, url string) *websocket.Conn {
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, _, err := websocket.Dial(context.Background(), url, nil)
		if err == nil {
			c.SetReadLimit(1 << 20)
			b.Cleanup(func() { c.CloseNow() })
			return c
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// BenchmarkConsoleViewers500: 500 WebSocket viewers of one node's console
// attached to one `anvil serve` process (the clients are this process); an
// op is one 80-byte line printed by the machine (ipmi_sim's SOL) and
// received by all 500. Reports the server's CPU time per line, its RSS
// before the viewers attached and with them, and the clients' CPU.
func BenchmarkConsoleViewers500(b *testing.B) {
	const viewers = 500
	if _, _, err := testbin.ProcMemory(1); err != nil {
		b.Skip(err)
	}
	s := freshServer(b, "console-viewers")
	serial, url := consoleNode(b, s)
	rssIdle, _, _ := testbin.ProcMemory(s.pid())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	for range viewers {
		c := dialConsole(b, url)
		go func() {
			for {
				typ, p, err := c.Read(ctx)
				if err != nil {
					return
				}
				if typ == websocket.MessageBinary {
					got.Add(int64(strings.Count(string(p), "\n")))
				}
			}
		}()
	}
	wait := func(n int64) {
		for deadline := time.Now().Add(30 * time.Second); got.Load() < n; {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d lines delivered", got.Load(), n)
			}
			time.Sleep(time.Millisecond) // polling with a deadline
		}
	}
	line := []byte(strings.Repeat("x", 78) + "\r\n")
	for deadline := time.Now().Add(20 * time.Second); got.Load() < viewers; { // the SOL is up, all attached
		if time.Now().After(deadline) {
			b.Fatalf("warm-up: %d lines delivered", got.Load())
		}
		serial.Write(line)
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	time.Sleep(500 * time.Millisecond) // the warm-up's last lines arrive
	got.Store(0)
	rssAttached, _, _ := testbin.ProcMemory(s.pid())
	srv0, _ := testbin.ProcCPU(s.pid())
	cli0, _ := testbin.ProcCPU(os.Getpid())
	b.ResetTimer()
	var sent int64
	for b.Loop() {
		serial.Write(line)
		sent++
		wait(sent * viewers)
	}
	b.StopTimer()
	srv1, _ := testbin.ProcCPU(s.pid())
	cli1, _ := testbin.ProcCPU(os.Getpid())
	rss, hwm, _ := testbin.ProcMemory(s.pid())
	b.ReportMetric(ms(srv1-srv0)/float64(sent), "srv-cpu-ms/line")
	b.ReportMetric(ms(cli1-cli0)/float64(sent), "client-cpu-ms/line")
	b.ReportMetric(float64(rssIdle)/(1<<20), "MiB-RSS-no-viewer")
	b.ReportMetric(float64(rssAttached)/(1<<20), "MiB-RSS-500-attached")
	b.ReportMetric(float64(rss)/(1<<20), "MiB-RSS-after")
	b.ReportMetric(float64(hwm)/(1<<20), "MiB-peak")
}

// BenchmarkConsoleEcho: keystroke to echo through one `anvil serve`
// process — WebSocket, the API, the console service, go-ipmi's SOL to
// ipmi_sim, its serial peer (which echoes the line), and back. An op types
// a 2-byte line and waits for its echo.
func BenchmarkConsoleEcho(b *testing.B) {
	s := freshServer(b, "console-echo")
	serial, url := consoleNode(b, s)
	c := dialConsole(b, url)
	echoBench(b, c, func(p []byte) { serial.Write(p) })
}

// BenchmarkConsoleEchoRelayed: BenchmarkConsoleEcho through an API-only
// process relaying to the conductor process that holds the console (both
// on a throwaway PostgreSQL): the relay's added latency.
func BenchmarkConsoleEchoRelayed(b *testing.B) {
	db := pg.URL(b)
	// A conductor serves no API: testbin waits for its listener instead.
	testbin.ServeOn(b, anvilBinary(b), db, "bench-conductor", "--role", "conductor")
	api := startServerOn(b, "console-relay-api", db, "--host-id", "bench-api", "--role", "api")
	b.Cleanup(api.stop)
	serial, url := consoleNode(b, api)
	c := dialConsole(b, url)
	echoBench(b, c, func(p []byte) { serial.Write(p) })
}

// echoBench waits for the console to carry output, then types lines into c
// and waits for each echo.
func echoBench(b *testing.B, c *websocket.Conn, machine func([]byte)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		for {
			typ, p, err := c.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				out <- string(p)
			}
		}
	}()
	until := func(want string, d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		var got strings.Builder
		for !strings.Contains(got.String(), want) {
			select {
			case p, ok := <-out:
				if !ok {
					return false
				}
				got.WriteString(p)
			case <-t.C:
				return false
			}
		}
		return true
	}
	for i := 0; !until("ready", 200*time.Millisecond); i++ { // the SOL connects
		if i == 100 {
			b.Fatal("no console output")
		}
		machine([]byte("ready\r\n"))
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		line := string(rune('0' + i%10))
		if err := c.Write(ctx, websocket.MessageBinary, []byte(line+"\r")); err != nil {
			b.Fatal(err)
		}
		if !until("echo: "+line+"\r\n", 30*time.Second) {
			b.Fatalf("no echo of %q", line)
		}
	}
}
