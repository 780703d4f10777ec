package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/pkg/events"
)

// nodeWatchCmd is `anvil node watch [NODE...] [--fields f1,f2]`: node changes
// printed live from the server's watch stream, one line each, until Ctrl-C.
func (a *app) nodeWatchCmd() *cobra.Command {
	var fields []string
	var history bool
	cmd := &cobra.Command{
		Use:               "watch [<node> ...]",
		Short:             "Print node changes live (Anvil's watch stream; no polling)",
		ValidArgsFunction: a.completeNodes,
	}
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "only changes of these fields (provision_state, power_state, maintenance, last_error, ...)")
	cmd.Flags().BoolVar(&history, "history", false, "also print every node history entry")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		f := events.Filter{Nodes: args, Fields: fields}
		if history {
			f.Types = []string{events.TypeCreated, events.TypeUpdated, events.TypeDeleted, events.TypeHistory}
		}
		sc := &events.Client{BaseURL: c.Endpoint(), HTTP: c.cfg.HTTP}
		if c.cfg.Username != "" {
			r := &http.Request{Header: http.Header{}}
			r.SetBasicAuth(c.cfg.Username, c.cfg.Password)
			sc.Header = r.Header
		}
		ch, err := sc.Subscribe(ctx, f)
		if se, ok := errors.AsType[*events.StatusError](err); ok {
			return &APIError{Status: se.Status, Message: se.Message} // as `node show` says it
		}
		if err != nil {
			return err
		}
		what := "all nodes"
		if len(args) > 0 {
			what = strings.Join(args, ", ")
		}
		fmt.Fprintf(a.env.Stderr, "Watching %s; Ctrl-C to stop.\n", what)
		for ev := range ch {
			if ev.Type == events.TypeError {
				return fmt.Errorf("%s", ev.Error)
			}
			printEvent(a.env.Stdout, ev)
		}
		return ctx.Err()
	})
	return cmd
}

// printEvent writes one event as a line: time, node, and what changed.
func printEvent(w io.Writer, ev events.Event) {
	who := ev.Name
	if who == "" {
		who = ev.Node
	}
	ts := ev.Time.Local().Format(time.TimeOnly)
	switch ev.Type {
	case events.TypeCreated:
		fmt.Fprintf(w, "%s %s created (%s)\n", ts, who, stateText(ev.State))
	case events.TypeDeleted:
		fmt.Fprintf(w, "%s %s deleted\n", ts, who)
	case events.TypeUpdated:
		var parts []string
		for _, f := range ev.Changed {
			if f == events.FieldName {
				parts = append(parts, "name -> "+orNone(ev.Name))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: %s -> %s", f, fieldText(ev.Previous, f), fieldText(ev.State, f)))
		}
		fmt.Fprintf(w, "%s %s %s\n", ts, who, strings.Join(parts, ", "))
	case events.TypeHistory:
		if ev.History != nil {
			fmt.Fprintf(w, "%s %s history: %s\n", ts, who, ev.History.Event)
		}
	case events.TypeReset:
		fmt.Fprintf(w, "%s events were missed (server restarted); showing changes from now on\n", ts)
	}
}

func stateText(s *events.NodeState) string {
	if s == nil {
		return "?"
	}
	return "provision_state: " + orNone(s.ProvisionState) + ", power_state: " + orNone(s.PowerState)
}

func fieldText(s *events.NodeState, field string) string {
	if s == nil {
		return "None"
	}
	switch field {
	case events.FieldProvisionState:
		return orNone(s.ProvisionState)
	case events.FieldTargetProvisionState:
		return orNone(s.TargetProvisionState)
	case events.FieldPowerState:
		return orNone(s.PowerState)
	case events.FieldTargetPowerState:
		return orNone(s.TargetPowerState)
	case events.FieldMaintenance:
		if s.Maintenance {
			return "True"
		}
		return "False"
	case events.FieldMaintenanceReason:
		return orNone(s.MaintenanceReason)
	case events.FieldFault:
		return orNone(s.Fault)
	case events.FieldLastError:
		return orNone(s.LastError)
	case events.FieldReservation:
		return orNone(s.Reservation)
	}
	return "?"
}
