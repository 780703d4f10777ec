package cli

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

func (a *app) driverCmd() *cobra.Command {
	var listOut, showOut outputOpts
	var typ string
	var long bool
	list := &cobra.Command{Use: "list [options]", Short: "List the enabled drivers", Args: cobra.ArbitraryArgs}
	list.Flags().StringVar(&typ, "type", "", "type of driver (classic or dynamic); default: all")
	list.Flags().BoolVar(&long, "long", false, "show detailed information about the drivers")
	listFields := newMultiArg(list.Flags(), "fields", "one or more driver fields; only these are fetched")
	list.MarkFlagsMutuallyExclusive("long", "fields")
	addListOutput(list, &listOut)
	list.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := listFields.take(args)
		if len(rest) > 0 {
			return usageErrorf("unrecognized arguments: %s", strings.Join(rest, " "))
		}
		if typ != "" && typ != "classic" && typ != "dynamic" {
			return usageErrorf("argument --type: invalid choice: %s (choose from 'classic', 'dynamic')", pyrepr.Quote(typ))
		}
		q := url.Values{}
		if typ != "" {
			q.Set("type", typ)
		}
		cols := driverListFields
		switch {
		case long:
			q.Set("detail", "True")
			cols = driverDetailFields()
		case len(fl) > 0:
			cols = fl
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		drivers, err := c.List(ctx, "/v1/drivers", "drivers", q, 0)
		if err != nil {
			return err
		}
		slices.SortStableFunc(drivers, func(x, y map[string]any) int { return compareValues(x["name"], y["name"]) })
		l := listing{alt: map[string][]string{}}
		for _, f := range cols {
			lb := driverLabel(f)
			l.columns = append(l.columns, lb)
			l.alt[lb] = []string{f}
		}
		for _, d := range drivers {
			row := make([]any, len(cols))
			for i, f := range cols {
				v, ok := d[f]
				if !ok {
					v = ""
				}
				row[i] = commaList(v)
			}
			l.rows = append(l.rows, row)
		}
		return listOut.writeList(a.env.Stdout, l)
	})
	show := &cobra.Command{Use: "show <driver>", Short: "Show information about a driver", Args: cobra.MinimumNArgs(1)}
	showFields := newMultiArg(show.Flags(), "fields", "one or more driver fields; only these are fetched")
	addShowOutput(show, &showOut)
	show.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := showFields.take(args)
		if len(rest) != 1 {
			return usageErrorf("expected one <driver>, got %d arguments", len(rest))
		}
		q := url.Values{}
		if len(fl) > 0 {
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		var d map[string]any
		if err := c.Get(ctx, "/v1/drivers/"+url.PathEscape(rest[0]), q, &d); err != nil {
			return err
		}
		delete(d, "properties")
		for k, v := range d {
			d[k] = commaList(v)
		}
		return showOut.writeOne(a.env.Stdout, recordOf(d))
	})
	return group("driver", "Show bare-metal drivers", list, show)
}

func (a *app) conductorCmd() *cobra.Command {
	var listOut, showOut outputOpts
	var marker, sortSpec string
	var limit int
	var long bool
	list := &cobra.Command{Use: "list [options]", Short: "List baremetal conductors", Args: cobra.ArbitraryArgs}
	f := list.Flags()
	f.IntVar(&limit, "limit", -1, "maximum number of conductors to return, 0 for no limit")
	f.StringVar(&marker, "marker", "", "hostname of the conductor after which the list starts")
	f.StringVar(&sortSpec, "sort", "", "sort output by fields: <key>[:asc|desc],...")
	f.BoolVar(&long, "long", false, "show detailed information about the conductors")
	listFields := newMultiArg(f, "fields", "one or more conductor fields; only these are fetched")
	list.MarkFlagsMutuallyExclusive("long", "fields")
	addListOutput(list, &listOut)
	list.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := listFields.take(args)
		if len(rest) > 0 {
			return usageErrorf("unrecognized arguments: %s", strings.Join(rest, " "))
		}
		if limit < -1 {
			return usageErrorf("Expected non-negative --limit, got %d", limit)
		}
		q := url.Values{}
		if marker != "" {
			q.Set("marker", marker)
		}
		cols := conductorFields
		switch {
		case long:
			q.Set("detail", "True")
			cols = conductorDetail
		case len(fl) > 0:
			cols = fl
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		conds, err := c.List(ctx, "/v1/conductors", "conductors", q, max(limit, 0))
		if err != nil {
			return err
		}
		if err := sortItems(conds, sortSpec); err != nil {
			return err
		}
		labels, alt := labelled(cols)
		l := listing{columns: labels, alt: alt}
		for _, cd := range conds {
			l.rows = append(l.rows, rowOf(cd, cols))
		}
		return listOut.writeList(a.env.Stdout, l)
	})
	show := &cobra.Command{Use: "show <conductor>", Short: "Show baremetal conductor details", Args: cobra.MinimumNArgs(1)}
	showFields := newMultiArg(show.Flags(), "fields", "one or more conductor fields; only these are fetched")
	addShowOutput(show, &showOut)
	show.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := showFields.take(args)
		if len(rest) != 1 {
			return usageErrorf("expected one <conductor>, got %d arguments", len(rest))
		}
		q := url.Values{}
		if len(fl) > 0 {
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		var cd map[string]any
		if err := c.Get(ctx, "/v1/conductors/"+url.PathEscape(rest[0]), q, &cd); err != nil {
			return err
		}
		return showOut.writeOne(a.env.Stdout, recordOf(cd))
	})
	return group("conductor", "Show bare-metal conductors", list, show)
}

// withEnabledDrivers adds the enabled hardware types to Ironic's answer for
// an unknown driver ("No valid host was found. ... supports driver X"),
// which names none; any other error is returned as it is.
func withEnabledDrivers(ctx context.Context, c *Client, err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "which supports driver") {
		return err
	}
	drivers, lerr := c.List(ctx, "/v1/drivers", "drivers", nil, 0)
	if lerr != nil || len(drivers) == 0 {
		return err
	}
	var names []string
	for _, d := range drivers {
		if n, _ := d["name"].(string); n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	e := *ae
	e.Message += " Enabled drivers: " + strings.Join(names, ", ") + " (anvil driver list)."
	return &e
}
