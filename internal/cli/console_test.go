package cli

import "testing"

func TestEscaper(t *testing.T) {
	for _, tc := range []struct {
		in   []string // successive reads
		want string
		quit bool
	}{
		{in: []string{"ls\r"}, want: "ls\r"},
		{in: []string{"~."}, want: "", quit: true},
		{in: []string{"ls\r~.rest"}, want: "ls\r", quit: true},
		{in: []string{"ls\r~", "."}, want: "ls\r", quit: true},
		{in: []string{"a~."}, want: "a~."},
		{in: []string{"~~."}, want: "~."},
		{in: []string{"~x"}, want: "~x"},
		{in: []string{"x\n~", "~", "~."}, want: "x\n~~."},
	} {
		e := &escaper{lineStart: true}
		got, quit := "", false
		for _, p := range tc.in {
			out, q := e.feed([]byte(p))
			got += string(out)
			if q {
				quit = true
				break
			}
		}
		if got != tc.want || quit != tc.quit {
			t.Errorf("%q: typed %q quit %v, want %q %v", tc.in, got, quit, tc.want, tc.quit)
		}
	}
}
