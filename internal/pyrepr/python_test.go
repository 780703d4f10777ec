package pyrepr

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// pyScript reads one JSON object per line, {"s": str} or {"f": float
// literal}, and prints [repr(v), json.dumps(v)] of the str or float.
const pyScript = `import sys, json
for line in sys.stdin:
    v = json.loads(line)
    v = v["s"] if "s" in v else float(v["f"])
    print(json.dumps([repr(v), json.dumps(v)]), flush=True)
`

// TestAgainstPython compares Repr and AppendJSONString with CPython's
// repr() and json.dumps() on random strings
// (drawn from ranges where quoting and printability rules differ) and random
// floats. It needs python3 on PATH; the other tests pin the same rules
// without it.
func TestAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", pyScript)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); cancel(); _ = cmd.Wait() }()
	out := bufio.NewScanner(outPipe)
	out.Buffer(make([]byte, 1<<20), 1<<20)

	rng := rand.New(rand.NewPCG(1, 2))
	ranges := [][2]rune{{0, 0x7f}, {0x80, 0x1ff}, {0x2000, 0x206f}, {0x3000, 0x303f}, {0xe000, 0xe00f},
		{0xfff0, 0xffff}, {0x1f600, 0x1f64f}, {0xe0000, 0xe007f}, {0x10fff0, 0x10ffff}, {'\'', '\''}, {'"', '"'}}
	check := func(v any) {
		t.Helper()
		msg := map[string]string{}
		if f, ok := v.(float64); ok {
			msg["f"] = strconv.FormatFloat(f, 'g', -1, 64)
		} else {
			msg["s"] = v.(string)
		}
		line, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatalf("python3 stopped: %v", out.Err())
		}
		var want []string
		if err := json.Unmarshal(out.Bytes(), &want); err != nil || len(want) != 2 {
			t.Fatalf("python3 answered %s: %v", out.Bytes(), err)
		}
		var got string
		if f, ok := v.(float64); ok {
			got = Float(f)
		} else {
			got = Repr(v)
			if j := string(AppendJSONString(nil, v.(string))); j != want[1] {
				t.Errorf("json.dumps(%s): got %s, python %s", line, j, want[1])
			}
		}
		if got != want[0] {
			t.Errorf("repr(%s): got %s, python %s", line, got, want[0])
		}
	}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(8) {
			r := ranges[rng.IntN(len(ranges))]
			c := r[0] + rune(rng.IntN(int(r[1]-r[0]+1)))
			if utf8.ValidRune(c) {
				b.WriteRune(c)
			}
		}
		check(b.String())
	}
	for range 2000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
		check(math.Round(f*1e6) / 1e6 * math.Pow(10, float64(rng.IntN(40)-20)))
	}
}
