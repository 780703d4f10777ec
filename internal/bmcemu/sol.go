package bmcemu

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/bougou/go-ipmi/pkg/hal"
)

// serialSocket is the name of the VM's serial port socket (QEMU mode) in
// the machine's state directory: QEMU serves it and logs what the guest
// prints to console.log as well.
const serialSocket = "serial.sock"

// serialBuffer bounds the machine output buffered between SOL polls; the
// oldest bytes go first (a real UART overruns too).
const serialBuffer = 64 << 10

// Console is the machine's serial port for SOL (QEMU mode; nil otherwise:
// the BMC then refuses to activate SOL).
func (h *machineHAL) Console() hal.ConsoleHAL {
	if h.ch.m.Console() == "" {
		return nil
	}
	return &vmConsole{path: filepath.Join(filepath.Dir(h.ch.m.Console()), serialSocket)}
}

// vmConsole attaches SOL to the VM's serial socket.
type vmConsole struct {
	path string
	mu   sync.Mutex
	open bool
}

// Open attaches (one activation at a time, as a shared serial port). The
// VM need not run: the line connects whenever it does, across power
// cycles, as a BMC's SOL stays up while the host reboots.
func (c *vmConsole) Open(context.Context) (hal.ConsoleConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open {
		return nil, errors.New("the serial port is already attached")
	}
	c.open = true
	s := &vmSerial{path: c.path, done: make(chan struct{}), release: func() {
		c.mu.Lock()
		c.open = false
		c.mu.Unlock()
	}}
	go s.run()
	return s, nil
}

// vmSerial is the line to the VM's serial socket: a reader goroutine
// buffers the guest's output, reconnecting while the VM is off.
type vmSerial struct {
	path    string
	done    chan struct{}
	once    sync.Once
	release func()

	mu   sync.Mutex
	conn net.Conn
	buf  []byte
}

func (s *vmSerial) run() {
	p := make([]byte, 4096)
	for {
		select {
		case <-s.done:
			return
		default:
		}
		c, err := net.DialTimeout("unix", s.path, time.Second)
		if err != nil {
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond): // the VM is off: retry
			}
			continue
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		s.conn = c
		s.mu.Unlock()
		for {
			n, err := c.Read(p)
			if n > 0 {
				s.mu.Lock()
				s.buf = append(s.buf, p[:n]...)
				if over := len(s.buf) - serialBuffer; over > 0 {
					s.buf = s.buf[over:]
				}
				s.mu.Unlock()
			}
			if err != nil {
				break
			}
		}
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		_ = c.Close()
	}
}

// ReadAvailable hands over the buffered output without blocking.
func (s *vmSerial) ReadAvailable(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Write types into the VM; with no VM running the characters are lost.
func (s *vmSerial) Write(p []byte) (int, error) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return len(p), nil
	}
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(p); err != nil {
		return len(p), nil // the VM went away mid-write: lost, as on a dead line
	}
	return len(p), nil
}

func (s *vmSerial) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.done)
		if s.conn != nil {
			_ = s.conn.Close()
		}
		s.mu.Unlock()
		s.release()
	})
	return nil
}

// SendBreak: a socket has no BREAK.
func (s *vmSerial) SendBreak(context.Context) error { return hal.ErrNotSupported }
