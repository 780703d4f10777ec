package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
)

// consoleBenchNode serves a node whose ipmi-sol console (ipmi_sim's SOL,
// a serial peer on TCP) is enabled, and returns its WebSocket URL.
func consoleBenchNode(b *testing.B) (*ipmisim.Serial, string) {
	serial := ipmisim.NewSerial(b, "")
	port := ipmisim.StartSOL(b, "anvil-bench", "sol-pw-123", "tcp:"+serial.Addr)
	s := serve(b)
	di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":"sol-pw-123"}`, port, ipmisim.User)
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmi-sol","driver_info":`+di+`}`, 201)["uuid"].(string)
	s.do("PUT", "/v1/nodes/"+node+"/states/console", `{"enabled": true}`, 202)
	return serial, "ws://" + strings.TrimPrefix(s.base, "http://") + "/v1/nodes/" + node + "/console/ws"
}

func benchDial(b *testing.B, url string) *websocket.Conn {
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, _, err := websocket.Dial(context.Background(), url, nil)
		if err == nil {
			b.Cleanup(func() { c.CloseNow() })
			return c
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// readBinaryUntil reads console output from c until it contains want.
func readBinaryUntil(ctx context.Context, c *websocket.Conn, want string) error {
	var got strings.Builder
	for !strings.Contains(got.String(), want) {
		typ, p, err := c.Read(ctx)
		if err != nil {
			return err
		}
		if typ == websocket.MessageBinary {
			got.Write(p)
		}
	}
	return nil
}

// BenchmarkConsoleEchoIPMISim: keystroke to echo through the whole path —
// WebSocket, the API, the console service, go-ipmi's SOL to ipmi_sim, its
// serial peer, and back. An op types a 2-byte line and waits for its echo.
func BenchmarkConsoleEchoIPMISim(b *testing.B) {
	serial, url := consoleBenchNode(b)
	c := benchDial(b, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for deadline := time.Now().Add(10 * time.Second); ; { // the SOL connects
		serial.Write([]byte("ready\r\n"))
		rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := readBinaryUntil(rctx, c, "ready")
		rcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no console output")
		}
		c = benchDial(b, url) // a timed-out read closes the connection
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		line := strconv.Itoa(i % 10)
		if err := c.Write(ctx, websocket.MessageBinary, []byte(line+"\r")); err != nil {
			b.Fatal(err)
		}
		if err := readBinaryUntil(ctx, c, "echo: "+line+"\r\n"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConsoleViewersIPMISim: 500 WebSocket viewers of one console
// (ipmi_sim's SOL) in this process; an op is one line printed by the
// machine and received by every viewer. Reports CPU time per line and the
// resident memory of the process (server and the 500 clients together).
func BenchmarkConsoleViewersIPMISim(b *testing.B) {
	const viewers = 500
	serial, url := consoleBenchNode(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	for i := range viewers {
		c := benchDial(b, url)
		c.SetReadLimit(1 << 20)
		_ = i
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
	rss0 := rssKiBProc()
	line := []byte(strings.Repeat("x", 78) + "\r\n")
	wait := func(n int64) {
		for deadline := time.Now().Add(30 * time.Second); got.Load() < n; {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d lines delivered", got.Load(), n)
			}
			time.Sleep(time.Millisecond) // polling with a deadline
		}
	}
	serial.Write(line) // warm-up: every viewer attached and the SOL up
	wait(viewers)
	got.Store(0)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	var sent int64
	for b.Loop() {
		serial.Write(line)
		sent++
		wait(sent * viewers)
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := (ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(sent), "cpu-ns/line")
	b.ReportMetric(float64(rssKiBProc()), "rss-KiB")
	b.ReportMetric(float64(rss0), "rss-attached-KiB")
}

// rssKiBProc is the process's VmRSS in KiB (0 if unknown).
func rssKiBProc() int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
