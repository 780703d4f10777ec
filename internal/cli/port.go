package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

func (a *app) portCmd() *cobra.Command {
	return group("port", "Manage bare-metal ports",
		a.portCreateCmd(), a.portListCmd(), a.portShowCmd(), a.portSetCmd(), a.portUnsetCmd(), a.portDeleteCmd())
}

// portPath is the API path of a port named by UUID.
func portPath(uuid string) string { return "/v1/ports/" + url.PathEscape(uuid) }

// portUUID resolves a port UUID or MAC address to the port's UUID.
func portUUID(ctx context.Context, c *Client, ident string) (string, error) {
	if _, err := net.ParseMAC(ident); err != nil {
		return ident, nil
	}
	ports, err := c.List(ctx, "/v1/ports", "ports", url.Values{"address": {ident}, "fields": {"uuid"}}, 0)
	if err != nil {
		return "", err
	}
	if len(ports) == 0 {
		return "", &APIError{Status: http.StatusNotFound, Message: fault.MissingText("Port", ident)}
	}
	uuid, _ := ports[0]["uuid"].(string)
	return uuid, nil
}

func (a *app) portCreateCmd() *cobra.Command {
	var out outputOpts
	var node, uuid, portgroup, physnet string
	var extra, llc []string
	var smartnic bool
	cmd := &cobra.Command{Use: "create <address> --node <node> [options]", Short: "Create a new port",
		Args: cobra.ArbitraryArgs}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "the node this port belongs to, by name or UUID [REQUIRED]")
	f.StringVar(&uuid, "uuid", "", "UUID of the port")
	f.StringArrayVar(&extra, "extra", nil, "key=value of arbitrary metadata (repeatable)")
	f.StringArrayVarP(&llc, "local-link-connection", "l", nil, "key=value describing the local link connection (repeatable)")
	pxe := newOptionalArg(f, "pxe-enabled", "boolean", "true", "whether this port is used when PXE booting the node")
	f.StringVar(&portgroup, "port-group", "", "UUID of the port group that this port belongs to")
	f.StringVar(&physnet, "physical-network", "", "name of the physical network to which this port is connected")
	f.BoolVar(&smartnic, "is-smartnic", false, "this port is a Smart NIC port")
	_ = cmd.MarkFlagRequired("node")
	_ = cmd.RegisterFlagCompletionFunc("node", a.completeNodes)
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		body := map[string]any{}
		if pxe.set {
			var v string
			v, args = pxe.take(args, isBoolWord)
			b, ok := parseBool(v)
			if !ok {
				return usageErrorf("argument --pxe-enabled: invalid boolean value: %s", pyrepr.Quote(v))
			}
			body["pxe_enabled"] = b
		}
		if len(args) != 1 {
			return usageErrorf("expected one <address>, got %d arguments", len(args))
		}
		body["address"] = args[0]
		for k, v := range map[string]string{"uuid": uuid, "portgroup_uuid": portgroup, "physical_network": physnet} {
			if v != "" {
				body[k] = v
			}
		}
		if smartnic {
			body["is_smartnic"] = true
		}
		for k, pairs := range map[string][]string{"extra": extra, "local_link_connection": llc} {
			m, err := kvMap(pairs)
			if err != nil {
				return err
			}
			if m != nil {
				body[k] = m
			}
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		if body["node_uuid"], err = nodeUUID(ctx, c, node); err != nil {
			return err
		}
		var port map[string]any
		if err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/ports", Body: body}, &port); err != nil {
			return err
		}
		return out.writeOne(a.env.Stdout, recordOf(port))
	})
	return cmd
}

func (a *app) portListCmd() *cobra.Command {
	var out outputOpts
	var address, node, portgroup, marker, sortSpec string
	var limit int
	var long bool
	cmd := &cobra.Command{Use: "list [options]", Short: "List baremetal ports", Args: cobra.ArbitraryArgs}
	f := cmd.Flags()
	f.StringVar(&address, "address", "", "only show the port with this MAC address")
	f.StringVar(&node, "node", "", "only list ports of this node (name or UUID)")
	f.StringVar(&portgroup, "port-group", "", "only list ports of this port group (name or UUID)")
	f.IntVar(&limit, "limit", -1, "maximum number of ports to return, 0 for no limit")
	f.StringVar(&marker, "marker", "", "port UUID after which the list starts")
	f.StringVar(&sortSpec, "sort", "", "sort output by fields: <key>[:asc|desc],...")
	f.BoolVar(&long, "long", false, "show detailed information about ports")
	fields := newMultiArg(f, "fields", "one or more port fields; only these are fetched")
	cmd.MarkFlagsMutuallyExclusive("long", "fields")
	_ = cmd.RegisterFlagCompletionFunc("node", a.completeNodes)
	addListOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := fields.take(args)
		if len(rest) > 0 {
			return usageErrorf("unrecognized arguments: %s", strings.Join(rest, " "))
		}
		if limit < -1 {
			return usageErrorf("Expected non-negative --limit, got %d", limit)
		}
		q := url.Values{}
		for k, v := range map[string]string{"address": address, "node": node, "portgroup": portgroup, "marker": marker} {
			if v != "" {
				q.Set(k, v)
			}
		}
		path, cols := "/v1/ports", portListFields
		switch {
		case long:
			path, cols = "/v1/ports/detail", portDetailFields
		case len(fl) > 0:
			for _, f := range fl {
				if !slices.Contains(portDetailFields, f) {
					return usageErrorf("argument --fields: invalid choice: %s", pyrepr.Quote(f))
				}
			}
			cols = fl
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		ports, err := c.List(ctx, path, "ports", q, max(limit, 0))
		if err != nil {
			return err
		}
		if err := sortItems(ports, sortSpec); err != nil {
			return err
		}
		labels, alt := labelled(cols)
		l := listing{columns: labels, alt: alt}
		for _, p := range ports {
			row := rowOf(p, cols)
			for i, f := range cols {
				if f == "extra" {
					row[i] = formatDict(row[i])
				}
			}
			l.rows = append(l.rows, row)
		}
		return out.writeList(a.env.Stdout, l)
	})
	return cmd
}

func (a *app) portShowCmd() *cobra.Command {
	var out outputOpts
	var byAddress bool
	cmd := &cobra.Command{Use: "show <port>", Short: "Show baremetal port details (by UUID or MAC address)",
		Args: cobra.MinimumNArgs(1)}
	cmd.Flags().BoolVar(&byAddress, "address", false, "<port> is the MAC address (instead of the UUID) of the port")
	fields := newMultiArg(cmd.Flags(), "fields", "one or more port fields; only these are fetched")
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := fields.take(args)
		if len(rest) != 1 {
			return usageErrorf("expected one <port>, got %d arguments", len(rest))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		q := url.Values{}
		if len(fl) > 0 {
			q.Set("fields", strings.Join(fl, ","))
		}
		var port map[string]any
		if byAddress {
			q.Set("address", rest[0])
			path := "/v1/ports/detail"
			if len(fl) > 0 {
				path = "/v1/ports"
			}
			ports, err := c.List(ctx, path, "ports", q, 0)
			if err != nil {
				return err
			}
			if len(ports) == 0 {
				return &APIError{Status: http.StatusNotFound, Message: fault.MissingText("Port", rest[0])}
			}
			port = ports[0]
		} else {
			id, err := portUUID(ctx, c, rest[0])
			if err != nil {
				return err
			}
			if err := c.Get(ctx, portPath(id), q, &port); err != nil {
				return err
			}
		}
		return out.writeOne(a.env.Stdout, recordOf(port))
	})
	return cmd
}

func (a *app) portSetCmd() *cobra.Command {
	var node, address, portgroup, physnet string
	var extra, llc []string
	var pxeOn, pxeOff, smartnic bool
	cmd := &cobra.Command{Use: "set <port> [options]", Short: "Set baremetal port properties", Args: cobra.ExactArgs(1)}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "set the node (name or UUID) of this port")
	f.StringVar(&address, "address", "", "set the MAC address for this port")
	f.StringArrayVar(&extra, "extra", nil, "extra key=value to set (repeatable)")
	f.StringVar(&portgroup, "port-group", "", "set the port group UUID of this port")
	f.StringArrayVarP(&llc, "local-link-connection", "l", nil, "local link connection key=value (repeatable)")
	f.BoolVar(&pxeOn, "pxe-enabled", false, "use this port when PXE booting the node")
	f.BoolVar(&pxeOff, "pxe-disabled", false, "do not use this port when PXE booting the node")
	f.StringVar(&physnet, "physical-network", "", "set the physical network of this port")
	f.BoolVar(&smartnic, "is-smartnic", false, "set the port to be a Smart NIC port")
	cmd.MarkFlagsMutuallyExclusive("pxe-enabled", "pxe-disabled")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var ops []patchOp
		if node != "" {
			id, err := nodeUUID(ctx, c, node)
			if err != nil {
				return err
			}
			ops = append(ops, patchOp{Op: "add", Path: "/node_uuid", Value: id})
		}
		for path, v := range map[string]string{"/address": address, "/portgroup_uuid": portgroup, "/physical_network": physnet} {
			if v != "" {
				ops = append(ops, patchOp{Op: "add", Path: path, Value: v})
			}
		}
		if ops, err = addKV(ops, "/extra", extra); err != nil {
			return err
		}
		if ops, err = addKV(ops, "/local_link_connection", llc); err != nil {
			return err
		}
		if pxeOn || pxeOff {
			ops = append(ops, patchOp{Op: "add", Path: "/pxe_enabled", Value: pxeOn})
		}
		if smartnic {
			ops = append(ops, patchOp{Op: "add", Path: "/is_smartnic", Value: true})
		}
		if len(ops) == 0 {
			fmt.Fprintln(a.env.Stderr, "Please specify what to set.")
			return nil
		}
		id, err := portUUID(ctx, c, args[0])
		if err != nil {
			return err
		}
		return c.Do(ctx, Request{Method: http.MethodPatch, Path: portPath(id), Body: ops}, nil)
	})
	return cmd
}

func (a *app) portUnsetCmd() *cobra.Command {
	var extra []string
	var portgroup, physnet, smartnic bool
	cmd := &cobra.Command{Use: "unset <port> [options]", Short: "Unset baremetal port properties", Args: cobra.ExactArgs(1)}
	f := cmd.Flags()
	f.StringArrayVar(&extra, "extra", nil, "extra to unset (repeatable)")
	f.BoolVar(&portgroup, "port-group", false, "remove the port from its port group")
	f.BoolVar(&physnet, "physical-network", false, "unset the physical network of this port")
	f.BoolVar(&smartnic, "is-smartnic", false, "set the Smart NIC flag to false")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		ops := removeKeys(nil, "/extra", extra)
		if portgroup {
			ops = append(ops, patchOp{Op: "remove", Path: "/portgroup_uuid"})
		}
		if physnet {
			ops = append(ops, patchOp{Op: "remove", Path: "/physical_network"})
		}
		if smartnic {
			ops = append(ops, patchOp{Op: "add", Path: "/is_smartnic", Value: false})
		}
		if len(ops) == 0 {
			fmt.Fprintln(a.env.Stderr, "Please specify what to unset.")
			return nil
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		id, err := portUUID(ctx, c, args[0])
		if err != nil {
			return err
		}
		return c.Do(ctx, Request{Method: http.MethodPatch, Path: portPath(id), Body: ops}, nil)
	})
	return cmd
}

func (a *app) portDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete <port> [<port> ...]", Short: "Delete port(s)", Args: cobra.MinimumNArgs(1)}
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var failures []string
		for _, p := range args {
			id, err := portUUID(ctx, c, p)
			if err == nil {
				err = c.Do(ctx, Request{Method: http.MethodDelete, Path: portPath(id)}, nil)
			}
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return err
				}
				failures = append(failures, fmt.Sprintf("Failed to delete port %s: %s", p, errorLine(err)))
				continue
			}
			fmt.Fprintf(a.env.Stdout, "Deleted port %s\n", p)
		}
		if len(failures) > 0 {
			return errors.New(strings.Join(failures, "\n"))
		}
		return nil
	})
	return cmd
}
