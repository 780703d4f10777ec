package dashboard

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"slices"

	"github.com/anvil-metal/anvil/internal/fsm"
)

// Diagram geometry, in SVG user units.
const (
	boxW, boxH = 132, 40
	colGap     = 56
	rowGap     = 14
	margin     = 16
)

// placed is a state's box in the diagram.
type placed struct {
	info     fsm.StateInfo
	rank, at int // column and row
	x, y     int // top-left corner
}

// StateClass is the one class a state is drawn with, failure before
// stable: failure, stable, wait, hold or busy (a transitional state).
func StateClass(s fsm.StateInfo) string {
	switch {
	case fsm.IsFailure(s.Name):
		return "failure"
	case s.Stable:
		return "stable"
	case fsm.IsWait(s.Name):
		return "wait"
	case fsm.IsHold(s.Name):
		return "hold"
	}
	return "busy"
}

// layout places every state of the machine: a state's column is its
// distance from enroll along the transitions (breadth first), and within a
// column states are ordered by the mean row of their predecessors in the
// previous column (then by the machine's order), which keeps most edges
// short. A state unreachable from enroll goes in the last column.
func layout() []placed {
	states := fsm.States()
	rank := map[string]int{fsm.Enroll: 0}
	queue := []string{fsm.Enroll}
	trans := fsm.Transitions()
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, t := range trans {
			if _, seen := rank[t.To]; !seen && t.From == s {
				rank[t.To] = rank[s] + 1
				queue = append(queue, t.To)
			}
		}
	}
	last := 0
	for _, r := range rank {
		last = max(last, r)
	}
	order := map[string]int{}
	out := make([]placed, len(states))
	for i, s := range states {
		r, ok := rank[s.Name]
		if !ok {
			r = last + 1
		}
		out[i] = placed{info: s, rank: r}
		order[s.Name] = i
	}
	row := map[string]float64{}
	for col := 0; col <= last+1; col++ {
		var in []*placed
		for i := range out {
			if out[i].rank == col {
				in = append(in, &out[i])
			}
		}
		bary := func(p *placed) float64 {
			sum, n := 0.0, 0
			for _, t := range trans {
				if t.To == p.info.Name && rank[t.From] == col-1 {
					sum += row[t.From]
					n++
				}
			}
			if n == 0 {
				return 1e9
			}
			return sum / float64(n)
		}
		slices.SortStableFunc(in, func(a, b *placed) int {
			if c := cmp.Compare(bary(a), bary(b)); c != 0 {
				return c
			}
			return cmp.Compare(order[a.info.Name], order[b.info.Name])
		})
		for at, p := range in {
			p.at = at
			row[p.info.Name] = float64(at)
			p.x = margin + col*(boxW+colGap)
			p.y = margin + at*(boxH+rowGap)
		}
	}
	return out
}

// renderDiagram draws the machine as SVG: one group per state (class from
// StateClass, data-state its name, a count text the page fills in) and one
// arrow per pair of states a transition joins, named by its events.
func renderDiagram() []byte {
	boxes := layout()
	at := map[string]*placed{}
	width, height := 0, 0
	for i := range boxes {
		p := &boxes[i]
		at[p.info.Name] = p
		width = max(width, p.x+boxW+margin)
		height = max(height, p.y+boxH+margin)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="lifecycle" viewBox="0 0 %d %d" role="img" aria-label="Provision state machine">`, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>`)
	b.WriteString(`<g class="edges">`)
	type pair struct{ from, to string }
	events := map[pair][]string{}
	var pairs []pair
	for _, t := range fsm.Transitions() {
		k := pair{t.From, t.To}
		if t.From == t.To {
			continue
		}
		if _, ok := events[k]; !ok {
			pairs = append(pairs, k)
		}
		events[k] = append(events[k], t.Event)
	}
	for _, k := range pairs {
		from, to := at[k.from], at[k.to]
		x1, y1 := from.x+boxW, from.y+boxH/2
		x2, y2 := to.x, to.y+boxH/2
		if to.rank <= from.rank { // backwards or within a column: leave by the left
			x1, x2 = from.x, to.x+boxW
			if to.rank == from.rank {
				x2 = to.x
			}
		}
		bend := (x1 + x2) / 2
		if to.rank <= from.rank {
			bend = min(x1, x2) - colGap/2 - 6*abs(from.at-to.at)
		}
		fmt.Fprintf(&b, `<path class="edge" data-from="%s" data-to="%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow)"><title>%s → %s: %s</title></path>`,
			html.EscapeString(k.from), html.EscapeString(k.to), x1, y1, bend, y1, bend, y2, x2, y2,
			html.EscapeString(k.from), html.EscapeString(k.to), html.EscapeString(joinEvents(events[k])))
	}
	b.WriteString(`</g><g class="states">`)
	for _, p := range boxes {
		name := html.EscapeString(p.info.Name)
		fmt.Fprintf(&b, `<g class="state %s" data-state="%s" tabindex="0" role="button" aria-label="%s">`, StateClass(p.info), name, name)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="%d"/>`, p.x, p.y, boxW, boxH, map[bool]int{true: 10, false: 4}[p.info.Stable])
		fmt.Fprintf(&b, `<text class="name" x="%d" y="%d">%s</text>`, p.x+boxW/2, p.y+16, name)
		fmt.Fprintf(&b, `<text class="count" x="%d" y="%d">0</text>`, p.x+boxW/2, p.y+33)
		b.WriteString(`</g>`)
	}
	b.WriteString("</g></svg>\n")
	return b.Bytes()
}

func joinEvents(evs []string) string {
	var b bytes.Buffer
	for i, e := range evs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e)
	}
	return b.String()
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
