package recent

import (
	"slices"
	"sync"
	"testing"
)

func TestLogBoundsPerKeyAndKeys(t *testing.T) {
	l := New[int](3, 2)
	for i := 1; i <= 5; i++ {
		l.Add(i, "a")
	}
	if got := l.Get("a"); !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("a = %v, want the last three oldest first", got)
	}
	l.Add(10, "b", "")
	l.Add(6, "a") // a is now written more recently than b
	l.Add(20, "c")
	if l.Keys() != 2 || l.Get("b") != nil {
		t.Fatalf("keys %d, b %v: the least recently written key must go", l.Keys(), l.Get("b"))
	}
	if got := l.Get("a"); !slices.Equal(got, []int{4, 5, 6}) {
		t.Fatalf("a = %v", got)
	}
	if got := l.Get("c"); !slices.Equal(got, []int{20}) {
		t.Fatalf("c = %v", got)
	}
}

func TestLogSeveralKeysAndNil(t *testing.T) {
	l := New[string](4, 10)
	l.Add("x", "mac", "node")
	if !slices.Equal(l.Get("mac"), []string{"x"}) || !slices.Equal(l.Get("node"), []string{"x"}) {
		t.Fatal("an event added under two keys is found by both")
	}
	var nl *Log[string]
	nl.Add("x", "k")
	if nl.Get("k") != nil || nl.Keys() != 0 {
		t.Fatal("a nil log records nothing")
	}
}

func TestLogConcurrent(t *testing.T) {
	l := New[int](8, 4)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				l.Add(i, string(rune('a'+g%6)))
				_ = l.Get("a")
			}
		}()
	}
	wg.Wait()
	if l.Keys() > 4 {
		t.Fatalf("%d keys, bound 4", l.Keys())
	}
}

// TestAddOrMerge: an event the newest one merges with replaces it, in a
// full ring too; others are added.
func TestAddOrMerge(t *testing.T) {
	l := New[int](3, 4)
	// merge: a value equal to the newest's tens digit is counted into it.
	merge := func(v int) func(int) (int, bool) {
		return func(prev int) (int, bool) { return prev + 1, prev/10 == v/10 }
	}
	for _, v := range []int{10, 11, 12, 20, 30, 31, 40, 41, 42} {
		l.AddOrMerge("k", v, merge(v))
	}
	if got := l.Get("k"); !slices.Equal(got, []int{20, 31, 42}) {
		t.Fatalf("k = %v, want [20 31 42]: each run of a tens digit in one slot", got)
	}
	var nl *Log[int]
	nl.AddOrMerge("k", 1, merge(1))
}
