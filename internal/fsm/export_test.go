package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
)

var update = flag.Bool("update", false, "rewrite docs/states.dot and docs/states.mmd from the tables")

func render(t *testing.T, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatalf("write: %v", err)
	}
	var again bytes.Buffer
	if err := write(&again); err != nil {
		t.Fatalf("write again: %v", err)
	}
	if !bytes.Equal(b.Bytes(), again.Bytes()) {
		t.Fatal("output differs between two runs")
	}
	return b.Bytes()
}

func TestWriteJSONMatchesReference(t *testing.T) {
	ref := loadReference(t)
	var got reference
	if err := json.Unmarshal(render(t, fsm.WriteJSON), &got); err != nil {
		t.Fatalf("decode WriteJSON output: %v", err)
	}
	if !reflect.DeepEqual(got.States, ref.States) {
		t.Errorf("states differ:\n got %+v\nwant %+v", got.States, ref.States)
	}
	if !reflect.DeepEqual(got.Transitions, ref.Transitions) {
		t.Errorf("transitions differ:\n got %+v\nwant %+v", got.Transitions, ref.Transitions)
	}
	if !reflect.DeepEqual(got.Verbs, ref.Verbs) {
		t.Errorf("verbs differ:\n got %v\nwant %v", got.Verbs, ref.Verbs)
	}
}

// TestWriteJSONVerbOrder checks that the verbs object keeps Ironic's order,
// which a Go map would lose.
func TestWriteJSONVerbOrder(t *testing.T) {
	out := string(render(t, fsm.WriteJSON))
	last := -1
	for _, v := range fsm.Verbs() {
		if v.Target == "rebuild" {
			if strings.Contains(out, `"rebuild":`) {
				t.Error("verbs include rebuild, which Ironic's VERBS lacks")
			}
			continue
		}
		at := strings.Index(out, strconv.Quote(v.Target)+": "+strconv.Quote(v.Event))
		if at < last {
			t.Errorf("verb %q out of order or missing", v.Target)
		}
		last = at
	}
}

func TestDiagramsCoverMachine(t *testing.T) {
	tests := []struct {
		name  string
		write func(io.Writer) error
		state func(fsm.StateInfo) string
		edge  func(fsm.Transition) string
		arrow string
	}{
		{"dot", fsm.WriteDOT,
			func(s fsm.StateInfo) string { return "  " + strconv.Quote(s.Name) + " [" },
			func(tr fsm.Transition) string {
				return fmt.Sprintf("  %q -> %q [label=%q", tr.From, tr.To, tr.Event)
			},
			" -> "},
		{"mermaid", fsm.WriteMermaid,
			func(s fsm.StateInfo) string {
				return fmt.Sprintf("    state %q as %s\n", s.Name, fsm.MermaidID(s.Name))
			},
			func(tr fsm.Transition) string {
				return fmt.Sprintf("    %s --> %s : %s\n", fsm.MermaidID(tr.From), fsm.MermaidID(tr.To), tr.Event)
			},
			" --> "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := string(render(t, tc.write))
			for _, s := range fsm.States() {
				if !strings.Contains(out, tc.state(s)) {
					t.Errorf("state %q missing", s.Name)
				}
			}
			for _, tr := range fsm.Transitions() {
				if !strings.Contains(out, tc.edge(tr)) {
					t.Errorf("transition %+v missing", tr)
				}
			}
			edges := 0
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, tc.arrow) && !strings.Contains(line, "[*]") {
					edges++
				}
			}
			if edges != len(fsm.Transitions()) {
				t.Errorf("%d edges drawn; want %d", edges, len(fsm.Transitions()))
			}
		})
	}
}

func TestMermaidIDs(t *testing.T) {
	seen := map[string]string{}
	for _, s := range fsm.States() {
		id := fsm.MermaidID(s.Name)
		if other, dup := seen[id]; dup {
			t.Errorf("states %q and %q share Mermaid id %q", s.Name, other, id)
		}
		seen[id] = s.Name
	}
	if got := fsm.MermaidID(fsm.DeployWait); got != "wait_call_back" {
		t.Errorf("MermaidID(%q) = %q; want wait_call_back", fsm.DeployWait, got)
	}
}

// TestGoldenDiagrams keeps the committed diagrams in step with the tables.
// Run `go test ./internal/fsm -update` to rewrite them.
func TestGoldenDiagrams(t *testing.T) {
	tests := []struct {
		file  string
		write func(io.Writer) error
	}{
		{"states.dot", fsm.WriteDOT},
		{"states.mmd", fsm.WriteMermaid},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("..", "..", "docs", tc.file)
			got := render(t, tc.write)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("docs/%s is stale; run `go test ./internal/fsm -update`", tc.file)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteErrorsAreReturned(t *testing.T) {
	for name, write := range map[string]func(io.Writer) error{
		"json": fsm.WriteJSON, "dot": fsm.WriteDOT, "mermaid": fsm.WriteMermaid,
	} {
		if err := write(failingWriter{}); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("%s: err = %v; want it to wrap io.ErrClosedPipe", name, err)
		}
	}
}
