package ipmisim

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// Serial is a fake machine serial port for ipmi_sim's SOL (Config.SOL
// "tcp:"+Addr): it greets every connection with Banner and answers each
// line typed into it (ended by CR or LF) with "echo: LINE\r\n". Lines
// holds what was typed.
type Serial struct {
	Addr   string
	Banner string
	ln     net.Listener
	mu     sync.Mutex
	lines  []string
	conns  map[net.Conn]bool
}

// NewSerial listens on a free loopback port until the test ends.
func NewSerial(t testing.TB, banner string) *Serial {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Serial{Addr: ln.Addr().String(), Banner: banner, ln: ln, conns: map[net.Conn]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
	})
	return s
}

func (s *Serial) serve(c net.Conn) {
	defer c.Close()
	if _, err := c.Write([]byte(s.Banner)); err != nil {
		return
	}
	r := bufio.NewReader(c)
	var line strings.Builder
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		if b != '\r' && b != '\n' {
			line.WriteByte(b)
			continue
		}
		if line.Len() == 0 {
			continue
		}
		l := line.String()
		line.Reset()
		s.mu.Lock()
		s.lines = append(s.lines, l)
		s.mu.Unlock()
		if _, err := c.Write([]byte("echo: " + l + "\r\n")); err != nil {
			return
		}
	}
}

// Write sends p to every connected console reader (the machine printing).
func (s *Serial) Write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_, _ = c.Write(p)
	}
}

// Lines returns the lines typed so far.
func (s *Serial) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}
