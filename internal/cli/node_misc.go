package cli

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// bootDevices are python-ironicclient's boot device choices.
var bootDevices = []string{"pxe", "disk", "cdrom", "bios", "safe", "wanboot"}

func (a *app) nodeValidateCmd() *cobra.Command {
	var out outputOpts
	cmd := &cobra.Command{Use: "validate <node>", Short: "Validate a node's driver interfaces",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	addListOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var res map[string]any
		if err := c.Get(ctx, nodePath(args[0], "validate"), nil, &res); err != nil {
			return err
		}
		l := listing{columns: []string{"Interface", "Result", "Reason"},
			alt: map[string][]string{"Interface": {"interface"}, "Result": {"result"}, "Reason": {"reason"}}}
		for _, iface := range sortedKeys(res) {
			r, _ := res[iface].(map[string]any)
			reason, ok := r["reason"]
			if !ok {
				reason = ""
			}
			l.rows = append(l.rows, []any{iface, r["result"], reason})
		}
		return out.writeList(a.env.Stdout, l)
	})
	return cmd
}

func (a *app) nodeBootCmd() *cobra.Command {
	var persistent, supported bool
	set := &cobra.Command{Use: "set <node> <device>", Short: "Set the boot device for a node",
		Args: cobra.ExactArgs(2), ValidArgsFunction: a.completeNodes}
	set.Flags().BoolVar(&persistent, "persistent", false, "make changes persistent for all future boots")
	set.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		if !slices.Contains(bootDevices, args[1]) {
			return usageErrorf("argument <device>: invalid choice: %s (choose from %s)", pyrepr.Quote(args[1]), pyrepr.QuoteAll(bootDevices))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		body := map[string]any{"boot_device": args[1], "persistent": persistent}
		return c.Do(ctx, Request{Method: http.MethodPut, Path: nodePath(args[0], "management", "boot_device"), Body: body}, nil)
	})
	var out outputOpts
	show := &cobra.Command{Use: "show <node>", Short: "Show the boot device information for a node",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	show.Flags().BoolVar(&supported, "supported", false, "show the supported boot devices")
	addShowOutput(show, &out)
	show.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		path := nodePath(args[0], "management", "boot_device")
		if supported {
			path += "/supported"
		}
		var info map[string]any
		if err := c.Get(ctx, path, nil, &info); err != nil {
			return err
		}
		if supported {
			info["supported_boot_devices"] = commaList(info["supported_boot_devices"])
		}
		return out.writeOne(a.env.Stdout, recordOf(info))
	})
	return group("boot", "Boot settings of a node", group("device", "Boot device of a node", set, show))
}

func (a *app) nodeHistoryCmd() *cobra.Command {
	var out, one outputOpts
	var long bool
	list := &cobra.Command{Use: "list <node>", Short: "Get history events for a baremetal node",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	list.Flags().BoolVar(&long, "long", false, "show detailed information about the events")
	addListOutput(list, &out)
	list.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		fields, q := historyFields, url.Values{}
		if long {
			fields = historyDetail
			q.Set("detail", "True")
		}
		events, err := c.List(ctx, nodePath(args[0], "history"), "history", q, 0)
		if err != nil {
			return err
		}
		labels, alt := labelled(fields)
		l := listing{columns: labels, alt: alt}
		for _, e := range events {
			row := make([]any, len(fields))
			for i, f := range fields {
				v, ok := e[f]
				if !ok {
					v = "" // osc-lib's get_dict_properties
				}
				row[i] = v
			}
			l.rows = append(l.rows, row)
		}
		return out.writeList(a.env.Stdout, l)
	})
	get := &cobra.Command{Use: "get <node> <event>", Short: "Get history event for a baremetal node",
		Args: cobra.ExactArgs(2), ValidArgsFunction: a.completeNodes}
	addShowOutput(get, &one)
	get.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var ev map[string]any
		if err := c.Get(ctx, nodePath(args[0], "history", url.PathEscape(args[1])), nil, &ev); err != nil {
			return err
		}
		return one.writeOne(a.env.Stdout, recordOf(ev))
	})
	return group("history", "History of a node", list, get)
}
