package console

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// echoConsole is a console that prints back what is typed into it.
type echoConsole struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func newEcho() *echoConsole {
	r, w := io.Pipe()
	return &echoConsole{r: r, w: w}
}
func (e *echoConsole) Read(p []byte) (int, error)  { return e.r.Read(p) }
func (e *echoConsole) Write(p []byte) (int, error) { return e.w.Write(p) }
func (e *echoConsole) Close() error                { _ = e.r.Close(); return e.w.Close() }

// BenchmarkKeystrokeEcho: a keystroke typed by a viewer, through the
// service to the console and its echo back to the viewer (the service's
// share of the console latency; the BMC's SOL adds its own).
func BenchmarkKeystrokeEcho(b *testing.B) {
	s := New(Config{})
	defer s.Close(context.Background())
	e := newEcho()
	s.Hold("n", "bench", func(context.Context) (io.ReadWriteCloser, error) { return e, nil })
	v, err := s.Attach("n", 0)
	if err != nil {
		b.Fatal(err)
	}
	key := []byte("k")
	for i := 0; ; i++ { // until the session has connected
		if i == 1e7 {
			b.Fatal("the console never connected")
		}
		if _, err := v.Write(key); err == nil {
			<-v.Output()
			break
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.Write(key); err != nil {
			b.Fatal(err)
		}
		<-v.Output()
	}
}

// BenchmarkViewers: one console's output fanned out to many viewers, each
// drained by its own goroutine (as the WebSocket handler does); an op is
// one 80-byte line delivered to all of them. Reports the process's CPU
// time per line and its resident memory.
func BenchmarkViewers(b *testing.B) {
	for _, n := range []int{1, 100, 500} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := New(Config{})
			defer s.Close(context.Background())
			e := newEcho()
			s.Hold("n", "bench", func(context.Context) (io.ReadWriteCloser, error) { return e, nil })
			line := []byte(strings.Repeat("x", 78) + "\r\n")
			var wg sync.WaitGroup
			got := make(chan struct{}, n)
			var vs []*Viewer
			for range n {
				v, err := s.Attach("n", 0)
				if err != nil {
					b.Fatal(err)
				}
				vs = append(vs, v)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case p := <-v.Output():
							if bytes.HasSuffix(p, []byte("\n")) {
								got <- struct{}{}
							}
						case <-v.Done():
							return
						}
					}
				}()
			}
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for b.Loop() {
				if _, err := e.w.Write(line); err != nil {
					b.Fatal(err)
				}
				for range n {
					<-got
				}
			}
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := tvNanos(ru1.Utime) + tvNanos(ru1.Stime) - tvNanos(ru0.Utime) - tvNanos(ru0.Stime)
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/line")
			b.ReportMetric(float64(rssKiB()), "rss-KiB")
			s.Stop("n", "done")
			wg.Wait()
		})
	}
}

func tvNanos(tv syscall.Timeval) int64 { return tv.Sec*1e9 + int64(tv.Usec)*1e3 }

// rssKiB is the process's resident set (VmRSS), 0 if unknown.
func rssKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
