package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/server"
)

// newAudit is `anvil audit FILE`: the audit records of `anvil serve
// --audit-log FILE` (or of its JSON log), filtered.
func newAudit(stdout io.Writer) *cobra.Command {
	var f server.AuditFilter
	var since, until, format string
	cmd := &cobra.Command{
		Use:   "audit FILE",
		Short: "Show the audit records of writes (anvil serve --audit-log FILE), by node, user and time",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var err error
			now := time.Now()
			if f.Since, err = parseWhen(since, now); err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			if f.Until, err = parseWhen(until, now); err != nil {
				return fmt.Errorf("--until: %w", err)
			}
			fh, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer fh.Close()
			recs, err := server.ReadAudit(fh, f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			switch format {
			case "json":
				enc := json.NewEncoder(stdout)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			case "table":
				tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tUSER\tREMOTE\tMETHOD\tPATH\tSTATUS\tREQUEST ID")
				for _, r := range recs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Time.UTC().Format(time.RFC3339), r.User,
						r.Remote, r.Method, r.Path, r.Status, r.RequestID)
				}
				return tw.Flush()
			}
			return fmt.Errorf("--format must be table or json, not %q", format)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Node, "node", "", "only this node (as named in the request path: UUID or name)")
	fl.StringVar(&f.User, "user", "", "only this user")
	fl.StringVar(&since, "since", "", "only from this time (RFC 3339) or this long ago (e.g. 2h)")
	fl.StringVar(&until, "until", "", "only before this time (RFC 3339) or this long ago")
	fl.StringVarP(&format, "format", "f", "table", "table or json (one record per line)")
	return cmd
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is zero.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration like 2h", s)
	}
	return now.Add(-d), nil
}
