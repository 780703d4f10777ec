package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// generatedBy heads the committed diagrams.
const generatedBy = "Generated from internal/fsm by `go test ./internal/fsm -update`; DO NOT EDIT."

type jsonState struct {
	Name   string  `json:"name"`
	Stable bool    `json:"stable"`
	Target *string `json:"target"` // null when the state has no target
}

type jsonTransition struct {
	Start string `json:"start"`
	Event string `json:"event"`
	End   string `json:"end"`
}

// jsonVerbs marshals as a JSON object that keeps the table's order.
type jsonVerbs []Verb

func (vs jsonVerbs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(v.Target)
		if err != nil {
			return nil, err
		}
		e, err := json.Marshal(v.Event)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(e)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteJSON writes the machine in the shape of Ironic's dump
// (testdata/ironic/ironic-fsm-master.json): states with stable flag and
// target, transitions as start/event/end, and verbs as Ironic's VERBS dict,
// which has no rebuild entry.
func WriteJSON(w io.Writer) error {
	doc := struct {
		States      []jsonState      `json:"states"`
		Transitions []jsonTransition `json:"transitions"`
		Verbs       jsonVerbs        `json:"verbs"`
	}{Verbs: ironicVerbs()}
	for _, s := range stateTable() {
		js := jsonState{Name: s.Name, Stable: s.Stable}
		if s.Target != "" {
			js.Target = &s.Target
		}
		doc.States = append(doc.States, js)
	}
	for _, t := range transitionTable() {
		doc.Transitions = append(doc.Transitions, jsonTransition{t.From, t.Event, t.To})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("fsm: encode JSON: %w", err)
	}
	return write(w, append(out, '\n'))
}

// Diagram colours: green for stable states, red for failure states.
const (
	stableFill = "#d5e8d4"
	failFill   = "#f8cecc"
	failStroke = "#b85450"
	failText   = "#8b0000"
	plainFill  = "#ffffff"
)

// dotAttrs styles a state: stable states are bold rounded boxes, unstable
// ones ellipses; failure states are filled red; wait states are dashed and
// hold states dotted.
func dotAttrs(s StateInfo) string {
	shape, style, fill := "ellipse", []string{"filled"}, plainFill
	if s.Stable {
		shape, style, fill = "box", []string{"rounded", "filled", "bold"}, stableFill
	}
	switch {
	case IsWait(s.Name):
		style = append(style, "dashed")
	case IsHold(s.Name):
		style = append(style, "dotted")
	}
	attrs := fmt.Sprintf("shape=%s, style=%q, fillcolor=%q", shape, strings.Join(style, ","), fill)
	if IsFailure(s.Name) {
		attrs = fmt.Sprintf("shape=%s, style=%q, fillcolor=%q, color=%q, fontcolor=%q",
			shape, strings.Join(style, ","), failFill, failStroke, failText)
	}
	return attrs
}

// WriteDOT writes the provision state machine as a Graphviz digraph: one
// node per state (see dotAttrs for the styling), one edge per transition
// labelled with its event; fail and abort edges are drawn red.
func WriteDOT(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", generatedBy)
	b.WriteString("// Stable states: bold boxes; failure states: red; wait: dashed; hold: dotted.\n")
	b.WriteString("digraph \"ironic provision states\" {\n")
	b.WriteString("  node [fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9];\n")
	for _, s := range stateTable() {
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(s.Name), dotAttrs(s))
	}
	for _, t := range transitionTable() {
		extra := ""
		if t.Event == EvFail || t.Event == EvAbort {
			extra = fmt.Sprintf(", color=%q, fontcolor=%q", failStroke, failStroke)
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s%s];\n",
			strconv.Quote(t.From), strconv.Quote(t.To), strconv.Quote(t.Event), extra)
	}
	b.WriteString("}\n")
	return write(w, b.Bytes())
}

// MermaidID returns the identifier a state has in the Mermaid diagram:
// its name with every character other than a letter or digit replaced by
// an underscore ("wait call-back" becomes wait_call_back).
func MermaidID(state string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, state)
}

// mermaidClass puts each state in one class; failure wins over stable.
func mermaidClass(s StateInfo) string {
	switch {
	case IsFailure(s.Name):
		return "failure"
	case s.Stable:
		return "stable"
	case IsWait(s.Name):
		return "wait"
	case IsHold(s.Name):
		return "hold"
	}
	return "busy"
}

// WriteMermaid writes the provision state machine as a Mermaid
// stateDiagram-v2. Every state is declared with its Ironic name and an id
// from [MermaidID]; a new node starts in enroll.
func WriteMermaid(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%%%% %s\n", generatedBy)
	b.WriteString("stateDiagram-v2\n")
	for _, s := range stateTable() {
		fmt.Fprintf(&b, "    state %q as %s\n", s.Name, MermaidID(s.Name))
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", MermaidID(Enroll))
	for _, t := range transitionTable() {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", MermaidID(t.From), MermaidID(t.To), t.Event)
	}
	classes := []struct{ name, style string }{
		{"stable", "fill:" + stableFill + ",stroke-width:2px,font-weight:bold"},
		{"failure", "fill:" + failFill + ",stroke:" + failStroke + ",color:" + failText},
		{"wait", "stroke-dasharray:5 5"},
		{"hold", "stroke-dasharray:2 2"},
		{"busy", "fill:" + plainFill},
	}
	for _, c := range classes {
		var ids []string
		for _, s := range stateTable() {
			if mermaidClass(s) == c.name {
				ids = append(ids, MermaidID(s.Name))
			}
		}
		fmt.Fprintf(&b, "    classDef %s %s\n", c.name, c.style)
		fmt.Fprintf(&b, "    class %s %s\n", strings.Join(ids, ","), c.name)
	}
	return write(w, b.Bytes())
}

func write(w io.Writer, p []byte) error {
	if _, err := w.Write(p); err != nil {
		return fmt.Errorf("fsm: write: %w", err)
	}
	return nil
}
