// Package recent keeps the last few events per key in memory, bounded both
// per key and in the number of keys: what the boot services saw for each
// MAC, the BMC calls of each node, the agents' failed lookups. The
// diagnosis of a failed node (internal/conductor) reads them. It does no
// I/O.
package recent

import "sync"

// Log holds, for each of at most Keys keys, its last PerKey events; when a
// new key would exceed Keys, the key written least recently is dropped.
// The zero Log is not usable: call New. A nil *Log records nothing and
// returns nothing, so optional recorders need no checks.
type Log[T any] struct {
	perKey, keys int

	mu    sync.Mutex
	byKey map[string]*entry[T]
	seq   uint64
}

type entry[T any] struct {
	events []T // ring: the oldest at next when full
	next   int
	full   bool
	seq    uint64 // the last write's sequence (for eviction)
}

// New returns a log keeping perKey events for each of at most keys keys
// (at least 1 each).
func New[T any](perKey, keys int) *Log[T] {
	return &Log[T]{perKey: max(perKey, 1), keys: max(keys, 1), byKey: map[string]*entry[T]{}}
}

// Add records ev under each of keys (an event of a MAC and a node is
// found by either); empty keys are skipped.
func (l *Log[T]) Add(ev T, keys ...string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if k != "" {
			l.addLocked(ev, k)
		}
	}
}

// addLocked appends ev to k's ring (l.mu held).
func (l *Log[T]) addLocked(ev T, k string) {
	e := l.byKey[k]
	if e == nil {
		if len(l.byKey) >= l.keys {
			l.evictLocked()
		}
		e = &entry[T]{events: make([]T, 0, min(l.perKey, 8))}
		l.byKey[k] = e
	}
	l.seq++
	e.seq = l.seq
	if len(e.events) < l.perKey {
		e.events = append(e.events, ev)
		return
	}
	e.events[e.next] = ev
	e.next = (e.next + 1) % l.perKey
	e.full = true
}

func (l *Log[T]) evictLocked() {
	var oldest string
	var seq uint64
	for k, e := range l.byKey {
		if oldest == "" || e.seq < seq {
			oldest, seq = k, e.seq
		}
	}
	delete(l.byKey, oldest)
}

// AddOrMerge is Add under one key, except that when merge, given the
// key's newest event, answers a replacement and true, that replaces it
// instead (a repeated outcome takes one slot).
func (l *Log[T]) AddOrMerge(key string, ev T, merge func(prev T) (T, bool)) {
	if l == nil || key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.byKey[key]; e != nil && len(e.events) > 0 {
		last := len(e.events) - 1
		if e.full {
			last = (e.next - 1 + l.perKey) % l.perKey
		}
		if m, ok := merge(e.events[last]); ok {
			e.events[last] = m
			l.seq++
			e.seq = l.seq
			return
		}
	}
	l.addLocked(ev, key)
}

// Get returns key's events, oldest first.
func (l *Log[T]) Get(key string) []T {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.byKey[key]
	if e == nil {
		return nil
	}
	out := make([]T, 0, len(e.events))
	if e.full {
		out = append(out, e.events[e.next:]...)
		return append(out, e.events[:e.next]...)
	}
	return append(out, e.events...)
}

// Keys is the number of keys held.
func (l *Log[T]) Keys() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byKey)
}
