package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/model"
)

// diagnoseTailLines is how much of the console tail the human output
// shows (-f json has all the diagnosis holds).
const diagnoseTailLines = 25

// `anvil node diagnose NODE`: why the node's last operation failed — the
// class, its evidence and what to do (GET /v1/nodes/{node}/diagnosis).
func (a *app) nodeDiagnoseCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{Use: "diagnose <node>", Short: "Explain why a node's last operation failed, and what to do",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "the output format: text or json")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("text", fmtJSON))
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		if format != "text" && format != fmtJSON {
			return usageErrorf("argument -f/--format: invalid choice: '%s' (choose from 'json', 'text')", format)
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		data, err := c.once(ctx, http.MethodGet, c.base+nodePath(args[0], "diagnosis"), c.currentVersion(), nil)
		if err != nil {
			return err
		}
		if format == fmtJSON {
			var b bytes.Buffer
			if err := json.Indent(&b, data, "", "  "); err != nil {
				return fmt.Errorf("the diagnosis is not JSON: %w", err)
			}
			b.WriteByte('\n')
			_, err = a.env.Stdout.Write(b.Bytes())
			return err
		}
		var d model.Diagnosis
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("the diagnosis is not JSON: %w", err)
		}
		return writeDiagnosis(a.env.Stdout, &d)
	})
	return cmd
}

// writeDiagnosis prints d for a person: what failed, the class and what
// to do first, then the evidence and the rest.
func writeDiagnosis(w io.Writer, d *model.Diagnosis) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Node %s failed at %s: %s (from %s)\n", d.NodeUUID, d.CreatedAt.Format("2006-01-02 15:04:05Z"), d.ProvisionState, d.FromState)
	fmt.Fprintf(&b, "Class:       %s\n", d.Class)
	fmt.Fprintf(&b, "Summary:     %s\n", d.Summary)
	fmt.Fprintf(&b, "What to do:  %s\n", d.Hint)
	if d.LastError != "" {
		fmt.Fprintf(&b, "last_error:  %s\n", stripControls(d.LastError))
	}
	b.WriteString("\nEvidence:\n")
	for _, e := range d.Evidence {
		fmt.Fprintf(&b, "  - %s\n", stripControls(e))
	}
	if len(d.BMCCalls) > 0 {
		b.WriteString("\nBMC calls:\n")
		for _, c := range d.BMCCalls {
			res := "ok"
			if c.Error != "" {
				res = stripControls(c.Error)
			}
			if c.Repeated > 0 {
				res += fmt.Sprintf(" (the same %d time(s) before)", c.Repeated)
			}
			fmt.Fprintf(&b, "  %s %s %s on %s: %s\n", c.Time.Format("15:04:05"), c.Protocol, c.Op, c.BMC, res)
		}
	}
	if len(d.Boot) > 0 {
		b.WriteString("\nBoot services saw:\n")
		for _, e := range d.Boot {
			who := e.MAC
			if who == "" {
				who = e.Remote
			}
			fmt.Fprintf(&b, "  %s %-9s %-17s %-28s %s", e.Time.Format("15:04:05"), e.Service, who, stripControls(e.File), e.Status)
			if e.Bytes > 0 {
				fmt.Fprintf(&b, " %d bytes", e.Bytes)
			}
			if e.Note != "" {
				fmt.Fprintf(&b, " (%s)", stripControls(e.Note))
			}
			b.WriteByte('\n')
		}
	}
	if len(d.Lookups) > 0 {
		b.WriteString("\nAgent lookups that matched no node:\n")
		for _, l := range d.Lookups {
			fmt.Fprintf(&b, "  %s MACs %s\n", l.Time.Format("15:04:05"), strings.Join(l.MACs, ", "))
		}
	}
	if l := d.AgentLogs; l != nil {
		b.WriteString("\nAgent logs (deploy_logs_collect=" + l.Collect + "): ")
		switch {
		case l.Path != "":
			fmt.Fprintf(&b, "%s (%d bytes, %d files)\n", l.Path, l.Bytes, len(l.Files))
		default:
			b.WriteString(l.Note + "\n")
		}
	}
	b.WriteString("\nConsole tail:\n")
	switch {
	case d.ConsoleTail != "":
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(d.ConsoleTail, "\r\n", "\n"), "\n"), "\n")
		for _, l := range lines[max(0, len(lines)-diagnoseTailLines):] {
			b.WriteString("  | " + stripControls(l) + "\n")
		}
	case d.ConsoleNote != "":
		b.WriteString("  (" + d.ConsoleNote + ")\n")
	default:
		b.WriteString("  (nothing recorded)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stripControls drops terminal escape sequences (CSI, OSC) and other
// control characters from text a console or a client sent, before it is
// printed to the user's terminal.
func stripControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			b.WriteByte(c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '[': // CSI: parameters up to a final byte
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		case i+1 < len(s) && s[i+1] == ']': // OSC: up to BEL or ST
			i += 2
			for i < len(s) && s[i] != 0x07 && !(s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\') {
				i++
			}
			if i < len(s) && s[i] == 0x1b {
				i++
			}
		default: // a two-byte escape
			i++
		}
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, b.String())
}
