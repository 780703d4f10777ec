package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/fleet"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// fleetNodeFields are the node fields the report reads.
const fleetNodeFields = "uuid,name,provision_state,target_provision_state,power_state,target_power_state," +
	"maintenance,maintenance_reason,fault,last_error,provision_updated_at,reservation"

// fleetReport is the state of a whole fleet at one moment.
type fleetReport struct {
	generated   time.Time
	endpoint    string
	total       int
	states      map[string]int
	failed      []map[string]any
	maintenance []map[string]any
	powerErrors []map[string]any
	stuck       []map[string]any
	stuckAfter  time.Duration
	conductors  []map[string]any
	alerts      []string
}

// alertCounts are the numbers --fail-on can test.
func (r *fleetReport) alertCounts() map[string]int {
	dead := 0
	for _, c := range r.conductors {
		if c["alive"] != true {
			dead++
		}
	}
	return map[string]int{"failed": len(r.failed), "maintenance": len(r.maintenance),
		"power-error": len(r.powerErrors), "stuck": len(r.stuck), "dead-conductor": dead}
}

// failCondition is one --fail-on item: a count and its threshold.
type failCondition struct {
	name string
	min  int
}

var failOnNames = []string{"failed", "maintenance", "power-error", "stuck", "dead-conductor", "any"}

// parseFailOn reads "failed,stuck>=3,maintenance>2".
func parseFailOn(spec string) ([]failCondition, error) {
	var out []failCondition
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, minimum := item, 1
		for _, op := range []string{">=", ">"} {
			if n, num, ok := strings.Cut(item, op); ok {
				v, err := strconv.Atoi(strings.TrimSpace(num))
				if err != nil || v < 0 {
					return nil, usageErrorf("invalid --fail-on %q: want NAME, NAME>=N or NAME>N", item)
				}
				name, minimum = strings.TrimSpace(n), v
				if op == ">" {
					minimum = v + 1
				}
				break
			}
		}
		if !slices.Contains(failOnNames, name) {
			return nil, usageErrorf("invalid --fail-on %q: conditions are %s", name, strings.Join(failOnNames, ", "))
		}
		out = append(out, failCondition{name: name, min: max(minimum, 1)})
	}
	return out, nil
}

func (a *app) fleetCmd() *cobra.Command {
	var format, failOn, stuckAfter string
	var noIndent bool
	report := &cobra.Command{
		Use:   "report [--stuck-after 30m] [--fail-on failed,stuck>=3] [-f table|json|yaml]",
		Short: "Report the fleet: states, failed, maintenance, power errors, stuck nodes, conductors",
		Long: "Report the whole fleet in one command: the number of nodes, the count per provision\n" +
			"state, failed nodes with last_error, maintenance nodes with reason and fault, power\n" +
			"errors, nodes in a transitional or wait state for longer than --stuck-after (time in\n" +
			"state from provision_updated_at), and the conductors with their alive status.\n\n" +
			"--fail-on makes it an alert check: it exits with status 2 when a listed condition holds\n" +
			"(failed, maintenance, power-error, stuck, dead-conductor or any; NAME>=N for a threshold).",
		Args: cobra.NoArgs,
	}
	f := report.Flags()
	f.StringVarP(&format, "format", "f", fmtTable, "the output format: table, json or yaml")
	f.BoolVar(&noIndent, "noindent", false, "whether to disable indenting the JSON")
	f.StringVar(&failOn, "fail-on", "", "exit 2 when one of these conditions holds: "+strings.Join(failOnNames, ", ")+" (NAME>=N for a threshold)")
	f.StringVar(&stuckAfter, "stuck-after", "30m", "a node in a transitional or wait state longer than this is stuck (seconds or a duration)")
	_ = report.RegisterFlagCompletionFunc("format", fixedCompletion(fmtTable, fmtJSON, fmtYAML))
	report.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
		conds, err := parseFailOn(failOn)
		if err != nil {
			return err
		}
		threshold, ok := parseSeconds(stuckAfter)
		if !ok {
			if threshold, err = time.ParseDuration(stuckAfter); err != nil || threshold < 0 {
				return usageErrorf("invalid --stuck-after %q: want seconds or a duration like 30m", stuckAfter)
			}
		}
		if format != fmtTable && format != fmtJSON && format != fmtYAML {
			return usageErrorf("argument -f/--format: invalid choice: %s (choose from 'json', 'table', 'yaml')", pyrepr.Quote(format))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		r, err := buildFleetReport(ctx, c, a.env.Now(), threshold)
		if err != nil {
			return err
		}
		r.alerts = evaluate(r.alertCounts(), conds)
		if err := r.write(a.env.Stdout, format, noIndent); err != nil {
			return err
		}
		if len(r.alerts) > 0 {
			return &exitError{code: 2, err: fmt.Errorf("fleet alert: %s", strings.Join(r.alerts, "; "))}
		}
		return nil
	})
	return group("fleet", "Fleet-wide views", report)
}

// evaluate returns the conditions that hold.
func evaluate(counts map[string]int, conds []failCondition) []string {
	var out []string
	for _, fc := range conds {
		names := []string{fc.name}
		if fc.name == "any" {
			names = failOnNames[:len(failOnNames)-1]
		}
		for _, n := range names {
			if counts[n] >= fc.min {
				out = append(out, fmt.Sprintf("%s: %d (threshold %d)", n, counts[n], fc.min))
			}
		}
	}
	return out
}

// buildFleetReport reads every node and conductor once.
func buildFleetReport(ctx context.Context, c *Client, now time.Time, stuckAfter time.Duration) (*fleetReport, error) {
	nodes, err := c.List(ctx, "/v1/nodes", "nodes", url.Values{"fields": {fleetNodeFields}}, 0)
	if err != nil {
		return nil, err
	}
	conds, err := c.List(ctx, "/v1/conductors", "conductors", url.Values{"fields": {"hostname,conductor_group,alive"}}, 0)
	if err != nil {
		return nil, err
	}
	r := &fleetReport{generated: now.UTC(), endpoint: c.Endpoint(), total: len(nodes),
		states: map[string]int{}, stuckAfter: stuckAfter, conductors: conds}
	str := func(n map[string]any, k string) string { s, _ := n[k].(string); return s }
	for _, n := range nodes {
		ps := str(n, "provision_state")
		r.states[orNone(ps)]++
		if fleet.Failed(ps) {
			r.failed = append(r.failed, pickKeys(n, "name", "uuid", "provision_state", "target_provision_state", "last_error"))
		}
		if n["maintenance"] == true {
			r.maintenance = append(r.maintenance, pickKeys(n, "name", "uuid", "provision_state", "maintenance_reason", "fault"))
		}
		if fleet.PowerError(str(n, "power_state")) {
			r.powerErrors = append(r.powerErrors, pickKeys(n, "name", "uuid", "power_state", "last_error"))
		}
		since, _ := parseTime(str(n, "provision_updated_at"))
		if fleet.Stuck(ps, since, now, stuckAfter) {
			s := pickKeys(n, "name", "uuid", "provision_state", "target_provision_state")
			s["since"] = str(n, "provision_updated_at")
			s["seconds_in_state"] = json.Number(strconv.Itoa(int(now.Sub(since).Seconds())))
			r.stuck = append(r.stuck, s)
		}
	}
	return r, nil
}

func pickKeys(n map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		out[k] = n[k]
	}
	return out
}

// parseTime reads Ironic's timestamps (RFC 3339, optional offset).
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// document is the machine-readable report (-f json|yaml).
func (r *fleetReport) document() orderedMap {
	states := orderedMap{Values: map[string]any{}}
	for _, s := range sortedKeys(toAnyMap(r.states)) {
		states.Keys = append(states.Keys, s)
		states.Values[s] = json.Number(strconv.Itoa(r.states[s]))
	}
	list := func(items []map[string]any) []any {
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = it
		}
		return out
	}
	alerts := make([]any, len(r.alerts))
	for i, al := range r.alerts {
		alerts[i] = al
	}
	doc := orderedMap{Values: map[string]any{
		"generated_at": r.generated.Format(time.RFC3339), "endpoint": r.endpoint,
		"total_nodes": json.Number(strconv.Itoa(r.total)), "provision_states": states,
		"failed_nodes": list(r.failed), "maintenance_nodes": list(r.maintenance),
		"power_errors": list(r.powerErrors), "stuck_nodes": list(r.stuck),
		"stuck_after_seconds": json.Number(strconv.Itoa(int(r.stuckAfter.Seconds()))),
		"conductors":          list(r.conductors), "alerts": alerts,
	}}
	doc.Keys = []string{"generated_at", "endpoint", "total_nodes", "provision_states", "failed_nodes",
		"maintenance_nodes", "power_errors", "stuck_after_seconds", "stuck_nodes", "conductors", "alerts"}
	return doc
}

func toAnyMap(m map[string]int) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (r *fleetReport) write(w io.Writer, format string, noIndent bool) error {
	var b strings.Builder
	switch format {
	case fmtJSON:
		indent := 2
		if noIndent {
			indent = -1
		}
		writePyJSON(&b, r.document(), indent, 0)
		b.WriteByte('\n')
	case fmtYAML:
		writeYAML(&b, r.document(), 0)
	default:
		r.writeText(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText is the report for people, in sections.
func (r *fleetReport) writeText(b *strings.Builder) {
	fmt.Fprintf(b, "Fleet report for %s at %s\n\n", r.endpoint, r.generated.Format(time.RFC3339))
	fmt.Fprintf(b, "Total nodes: %d\n", r.total)
	if r.total > 0 {
		b.WriteString("\nNodes per provision state:\n")
		for _, s := range sortedKeys(toAnyMap(r.states)) {
			fmt.Fprintf(b, "  %-16s %d\n", s, r.states[s])
		}
	}
	section := func(title string, items []map[string]any, fields []string) {
		fmt.Fprintf(b, "\n%s: %d\n", title, len(items))
		if len(items) == 0 {
			return
		}
		labels, _ := labelled(fields)
		rows := make([][]any, len(items))
		for i, it := range items {
			rows[i] = rowOf(it, fields)
		}
		renderTable(b, labels, rows, true, false)
	}
	section("Failed nodes", r.failed, []string{"name", "uuid", "provision_state", "last_error"})
	section("Nodes in maintenance", r.maintenance, []string{"name", "uuid", "maintenance_reason", "fault"})
	section("Power errors", r.powerErrors, []string{"name", "uuid", "power_state", "last_error"})
	section(fmt.Sprintf("Nodes stuck in a transitional state for more than %s", r.stuckAfter),
		r.stuck, []string{"name", "uuid", "provision_state", "target_provision_state", "seconds_in_state"})
	section("Conductors", r.conductors, []string{"hostname", "conductor_group", "alive"})
	if len(r.alerts) > 0 {
		b.WriteString("\nAlerts:\n")
		for _, al := range r.alerts {
			fmt.Fprintf(b, "  %s\n", al)
		}
	}
}
