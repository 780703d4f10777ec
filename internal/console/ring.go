package console

// ringBuf keeps the last cap bytes written to it.
type ringBuf struct {
	buf  []byte // grows to cap, then wraps
	cap  int
	head int // next write position once full
	full bool
}

func (r *ringBuf) size() int {
	if r.full {
		return r.cap
	}
	return len(r.buf)
}

func (r *ringBuf) write(p []byte) {
	if r.cap <= 0 {
		return
	}
	if len(p) >= r.cap {
		p = p[len(p)-r.cap:]
	}
	if !r.full {
		room := r.cap - len(r.buf)
		if len(p) <= room {
			r.buf = append(r.buf, p...)
			if len(r.buf) == r.cap {
				r.full, r.head = true, 0
			}
			return
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
		r.full, r.head = true, 0
	}
	for len(p) > 0 {
		n := copy(r.buf[r.head:], p)
		p = p[n:]
		r.head = (r.head + n) % r.cap
	}
}

// tail returns a copy of the last n bytes (all when n <= 0 or n is more
// than held).
func (r *ringBuf) tail(n int) []byte {
	size := r.size()
	if n <= 0 || n > size {
		n = size
	}
	out := make([]byte, 0, n)
	if !r.full {
		return append(out, r.buf[len(r.buf)-n:]...)
	}
	start := (r.head - n + r.cap) % r.cap
	if start+n <= r.cap {
		return append(out, r.buf[start:start+n]...)
	}
	out = append(out, r.buf[start:]...)
	return append(out, r.buf[:n-(r.cap-start)]...)
}
