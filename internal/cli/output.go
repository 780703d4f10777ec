package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Output formats, as cliff names them.
const (
	fmtTable = "table"
	fmtJSON  = "json"
	fmtValue = "value"
	fmtYAML  = "yaml"
	fmtCSV   = "csv"
	fmtShell = "shell"
)

// outputOpts are the cliff output options of one command.
type outputOpts struct {
	format     string
	columns    []string
	noIndent   bool
	prefix     string // shell
	quote      string // csv: all, minimal, nonnumeric, none
	printEmpty bool   // table
}

// addListOutput adds the options of a command printing rows.
func addListOutput(cmd *cobra.Command, o *outputOpts) {
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", fmtTable, "the output format: table, json, value, yaml or csv")
	f.StringArrayVarP(&o.columns, "column", "c", nil, "a column to include (repeat for more); the default is all columns")
	f.BoolVar(&o.noIndent, "noindent", false, "whether to disable indenting the JSON")
	f.StringVar(&o.quote, "quote", "nonnumeric", "csv: when to include quotes (all, minimal, none, nonnumeric)")
	f.BoolVar(&o.printEmpty, "print-empty", false, "table: print an empty table if there is no data to show")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(fmtTable, fmtJSON, fmtValue, fmtYAML, fmtCSV))
}

// addShowOutput adds the options of a command printing one object.
func addShowOutput(cmd *cobra.Command, o *outputOpts) {
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", fmtTable, "the output format: table, json, value, yaml or shell")
	f.StringArrayVarP(&o.columns, "column", "c", nil, "a field to include (repeat for more); the default is all fields")
	f.BoolVar(&o.noIndent, "noindent", false, "whether to disable indenting the JSON")
	f.StringVar(&o.prefix, "prefix", "", "shell: add a prefix to all variable names")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(fmtTable, fmtJSON, fmtValue, fmtYAML, fmtShell))
}

// listing is rows of values under column labels; alt gives, per label,
// the other names -c accepts for it (the API field name, aliases).
type listing struct {
	columns []string
	alt     map[string][]string
	rows    [][]any
}

// record is one object: field names and their values.
type record struct {
	fields []string
	alt    map[string][]string
	values []any
}

// selectColumns returns the indexes of names that -c asked for, in the
// dataset's order (as cliff does); an empty want keeps everything.
func selectColumns(names []string, alt map[string][]string, want []string) ([]int, error) {
	var idx []int
	for i, n := range names {
		if len(want) == 0 || wanted(n, alt[n], want) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, usageErrorf("No recognized column names in %s. Recognized columns are %s.",
			pyrepr.Strings(want), pyrepr.StringTuple(names))
	}
	return idx, nil
}

func wanted(name string, alt, want []string) bool {
	for _, w := range want {
		if strings.EqualFold(w, name) {
			return true
		}
		for _, a := range alt {
			if strings.EqualFold(w, a) {
				return true
			}
		}
	}
	return false
}

// writeList prints l in the chosen format.
func (o *outputOpts) writeList(w io.Writer, l listing) error {
	idx, err := selectColumns(l.columns, l.alt, o.columns)
	if err != nil {
		return err
	}
	cols := pick(l.columns, idx)
	rows := make([][]any, len(l.rows))
	for i, r := range l.rows {
		rows[i] = pick(r, idx)
	}
	var b strings.Builder
	switch o.format {
	case fmtTable, "":
		renderTable(&b, cols, rows, true, o.printEmpty)
	case fmtValue:
		for _, r := range rows {
			parts := make([]string, len(r))
			for i, v := range r {
				parts[i] = pyrepr.Str(v)
			}
			b.WriteString(strings.Join(parts, " ") + "\n")
		}
	case fmtJSON, fmtYAML:
		items := make([]any, len(rows))
		for i, r := range rows {
			m := orderedMap{Keys: cols, Values: map[string]any{}}
			for j, c := range cols {
				m.Values[c] = r[j]
			}
			items[i] = m
		}
		if o.format == fmtYAML {
			writeYAML(&b, items, 0)
		} else {
			writePyJSON(&b, items, o.indent(), 0)
			b.WriteByte('\n')
		}
	case fmtCSV:
		if err := writeCSV(&b, cols, rows, o.quote); err != nil {
			return err
		}
	default:
		return usageErrorf("argument -f/--format: invalid choice: %s (choose from 'csv', 'json', 'table', 'value', 'yaml')", pyrepr.Quote(o.format))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// writeOne prints r in the chosen format.
func (o *outputOpts) writeOne(w io.Writer, r record) error {
	idx, err := selectColumns(r.fields, r.alt, o.columns)
	if err != nil {
		return err
	}
	fields, values := pick(r.fields, idx), pick(r.values, idx)
	var b strings.Builder
	switch o.format {
	case fmtTable, "":
		rows := make([][]any, len(fields))
		for i := range fields {
			rows[i] = []any{fields[i], values[i]}
		}
		renderTable(&b, []string{"Field", "Value"}, rows, false, false)
	case fmtValue:
		for _, v := range values {
			b.WriteString(pyrepr.Str(v) + "\n")
		}
	case fmtJSON:
		m := orderedMap{Keys: fields, Values: map[string]any{}}
		for i, f := range fields {
			m.Values[f] = values[i]
		}
		writePyJSON(&b, m, o.indent(), 0)
		b.WriteByte('\n')
	case fmtYAML:
		for i, f := range fields { // cliff dumps each field on its own
			writeYAMLMap(&b, []string{f}, func(string) any { return values[i] }, 0, "")
		}
	case fmtShell:
		for i, f := range fields {
			name := strings.NewReplacer(" ", "_", ":", "_", "-", "_").Replace(strings.ToLower(f))
			v := pyrepr.Str(values[i])
			if _, isStr := values[i].(string); isStr {
				v = strings.ReplaceAll(v, `"`, `\"`)
			}
			fmt.Fprintf(&b, "%s%s=\"%s\"\n", o.prefix, name, v)
		}
	case fmtCSV:
		if err := writeCSV(&b, fields, [][]any{values}, o.quote); err != nil {
			return err
		}
	default:
		return usageErrorf("argument -f/--format: invalid choice: %s (choose from 'json', 'shell', 'table', 'value', 'yaml')", pyrepr.Quote(o.format))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func (o *outputOpts) indent() int {
	if o.noIndent {
		return -1
	}
	return 2
}

func pick[T any](in []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = in[j]
	}
	return out
}

// writeCSV writes Python's csv.writer output (escapechar '\').
func writeCSV(b *strings.Builder, cols []string, rows [][]any, quote string) error {
	if quote == "" {
		quote = "nonnumeric"
	}
	switch quote {
	case "all", "minimal", "nonnumeric", "none":
	default:
		return usageErrorf("argument --quote: invalid choice: %s (choose from 'all', 'minimal', 'none', 'nonnumeric')", pyrepr.Quote(quote))
	}
	cell := func(v any) string {
		s, numeric := "", false
		switch x := v.(type) {
		case nil:
		case bool, json.Number, int, float64:
			s, numeric = pyrepr.Str(x), true
		default:
			s = pyrepr.Str(x)
		}
		quoteIt := quote == "all" || (quote == "nonnumeric" && !numeric) ||
			(quote == "minimal" && strings.ContainsAny(s, ",\"\r\n"))
		s = strings.ReplaceAll(s, `\`, `\\`)
		if quote == "none" {
			return strings.NewReplacer(`,`, `\,`, `"`, `\"`).Replace(s)
		}
		if quoteIt {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
		return s
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = cell(c)
	}
	b.WriteString(strings.Join(header, ",") + "\n")
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, v := range r {
			parts[i] = cell(v)
		}
		b.WriteString(strings.Join(parts, ",") + "\n")
	}
	return nil
}

// renderTable draws a prettytable as cliff configures it: every column
// left-aligned, except (in lists) columns whose first value is a number.
// An empty list prints a blank line, or the bare header with printEmpty.
func renderTable(b *strings.Builder, headers []string, rows [][]any, list, printEmpty bool) {
	if len(rows) == 0 && !printEmpty {
		b.WriteString("\n")
		return
	}
	right := make([]bool, len(headers))
	if list && len(rows) > 0 {
		for i, v := range rows[0] {
			_, right[i] = v.(json.Number)
		}
	}
	cells := make([][][]string, len(rows))
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = displayWidth(h)
	}
	for r, row := range rows {
		cells[r] = make([][]string, len(row))
		for c, v := range row {
			s := strings.ReplaceAll(pyrepr.Str(v), "\r\n", "\n")
			s = strings.ReplaceAll(s, "\r", " ")
			lines := strings.Split(s, "\n")
			cells[r][c] = lines
			for _, l := range lines {
				widths[c] = max(widths[c], displayWidth(l))
			}
		}
	}
	border := "+"
	for _, w := range widths {
		border += strings.Repeat("-", w+2) + "+"
	}
	border += "\n"
	line := func(parts []string) {
		b.WriteString("|")
		for i, p := range parts {
			padding := strings.Repeat(" ", widths[i]-displayWidth(p))
			if right[i] {
				b.WriteString(" " + padding + p + " |")
			} else {
				b.WriteString(" " + p + padding + " |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(border)
	line(headers)
	b.WriteString(border)
	for _, row := range cells {
		height := 1
		for _, c := range row {
			height = max(height, len(c))
		}
		for h := 0; h < height; h++ {
			parts := make([]string, len(row))
			for i, c := range row {
				if h < len(c) {
					parts[i] = c[h]
				}
			}
			line(parts)
		}
	}
	b.WriteString(border)
}

// displayWidth counts terminal columns: East Asian wide characters take
// two, combining marks none.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200b:
		case isWide(r):
			w += 2
		default:
			w++
		}
	}
	return w
}

func isWide(r rune) bool {
	wide := [][2]rune{
		{0x1100, 0x115F}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF},
		{0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
		{0xFE30, 0xFE4F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
		{0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD},
	}
	for _, rg := range wide {
		if r >= rg[0] && r <= rg[1] {
			return true
		}
	}
	return false
}
