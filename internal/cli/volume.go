package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// volumeKind is what differs between `volume connector` and `volume
// target` (python-ironicclient's commands of the same names).
type volumeKind struct {
	name, plural string // "connector", "connectors"
	listFields   []string
	detailFields []string
	// strs are the scalar options of create and set, flag → field, in
	// python-ironicclient's patch order (boot-index is the integer one).
	strs [][2]string
	// dicts are the key=value options: flag → field; create, set and
	// unset take them.
	dicts [][2]string
	// required are the create options that must be given.
	required []string
	// bootIndex: create and set take --boot-index.
	bootIndex bool
}

var (
	connectorCLI = volumeKind{name: "connector", plural: "connectors",
		listFields:   []string{"uuid", "node_uuid", "type", "connector_id"},
		detailFields: []string{"uuid", "node_uuid", "type", "connector_id", "extra", "created_at", "updated_at"},
		strs:         [][2]string{{"type", "type"}, {"connector-id", "connector_id"}},
		dicts:        [][2]string{{"extra", "extra"}},
		required:     []string{"node", "type", "connector-id"}}
	targetCLI = volumeKind{name: "target", plural: "targets",
		listFields: []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"},
		detailFields: []string{"uuid", "node_uuid", "volume_type", "properties", "boot_index", "extra",
			"volume_id", "created_at", "updated_at"},
		strs:     [][2]string{{"type", "volume_type"}, {"boot-index", "boot_index"}, {"volume-id", "volume_id"}},
		dicts:    [][2]string{{"property", "properties"}, {"extra", "extra"}},
		required: []string{"node", "type", "boot-index", "volume-id"}, bootIndex: true}
)

func (a *app) volumeCmd() *cobra.Command {
	return group("volume", "Manage volume connectors and targets (boot from volume)",
		a.volumeKindCmd(&connectorCLI), a.volumeKindCmd(&targetCLI))
}

func (a *app) volumeKindCmd(k *volumeKind) *cobra.Command {
	return group(k.name, "Manage volume "+k.plural,
		a.volumeCreateCmd(k), a.volumeListCmd(k), a.volumeShowCmd(k), a.volumeSetCmd(k, false),
		a.volumeSetCmd(k, true), a.volumeDeleteCmd(k))
}

func (k *volumeKind) path(id string) string {
	p := "/v1/volume/" + k.plural
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	return p
}

// volumeOpts are the options create and set share.
type volumeOpts struct {
	node      string
	strs      map[string]*string
	dicts     map[string]*[]string
	bootIndex int
}

func (k *volumeKind) addOpts(cmd *cobra.Command, verb string) *volumeOpts {
	o := &volumeOpts{strs: map[string]*string{}, dicts: map[string]*[]string{}}
	f := cmd.Flags()
	f.StringVar(&o.node, "node", "", verb+" the node (name or UUID) of this volume "+k.name)
	for _, s := range k.strs {
		if s[0] != "boot-index" {
			o.strs[s[0]] = f.String(s[0], "", verb+" the "+strings.ReplaceAll(s[1], "_", " "))
		}
	}
	for _, d := range k.dicts {
		o.dicts[d[0]] = f.StringArray(d[0], nil, d[1]+" key=value (repeatable)")
	}
	if k.bootIndex {
		f.IntVar(&o.bootIndex, "boot-index", 0, verb+" the boot index of the volume target")
	}
	return o
}

func (a *app) volumeCreateCmd(k *volumeKind) *cobra.Command {
	var out outputOpts
	var id string
	cmd := &cobra.Command{Use: "create --node <node> [options]", Short: "Create a new volume " + k.name, Args: cobra.NoArgs}
	o := k.addOpts(cmd, "set")
	cmd.Flags().StringVar(&id, "uuid", "", "UUID of the volume "+k.name)
	for _, r := range k.required {
		_ = cmd.MarkFlagRequired(r)
	}
	_ = cmd.RegisterFlagCompletionFunc("node", a.completeNodes)
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		body, err := o.scalars(k, cmd)
		if err != nil {
			return err
		}
		for _, d := range k.dicts {
			m, err := kvMap(*o.dicts[d[0]])
			if err != nil {
				return err
			}
			if m != nil {
				body[d[1]] = m
			}
		}
		if id != "" {
			body["uuid"] = id
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		if body["node_uuid"], err = nodeUUID(ctx, c, o.node); err != nil {
			return err
		}
		var v map[string]any
		if err := c.Do(ctx, Request{Method: http.MethodPost, Path: k.path(""), Body: body}, &v); err != nil {
			return err
		}
		return out.writeOne(a.env.Stdout, recordOf(v))
	})
	return cmd
}

func (a *app) volumeListCmd(k *volumeKind) *cobra.Command {
	var out outputOpts
	var node, marker, sortSpec string
	var limit int
	var long bool
	cmd := &cobra.Command{Use: "list [options]", Short: "List baremetal volume " + k.plural, Args: cobra.ArbitraryArgs}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "only list the volume "+k.plural+" of this node (name or UUID)")
	f.IntVar(&limit, "limit", -1, "maximum number of volume "+k.plural+" to return, 0 for no limit")
	f.StringVar(&marker, "marker", "", "volume "+k.name+" UUID after which the list starts")
	f.StringVar(&sortSpec, "sort", "", "sort output by fields: <key>[:asc|desc],...")
	f.BoolVar(&long, "long", false, "show detailed information about the volume "+k.plural)
	fields := newMultiArg(f, "fields", "one or more volume "+k.name+" fields; only these are fetched")
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
		for key, v := range map[string]string{"node": node, "marker": marker} {
			if v != "" {
				q.Set(key, v)
			}
		}
		cols := k.listFields
		switch {
		case long:
			cols = k.detailFields
			q.Set("detail", "True")
		case len(fl) > 0:
			for _, f := range fl {
				if !slices.Contains(k.detailFields, f) {
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
		items, err := c.List(ctx, k.path(""), k.plural, q, max(limit, 0))
		if err != nil {
			return err
		}
		if err := sortItems(items, sortSpec); err != nil {
			return err
		}
		labels, alt := labelled(cols)
		l := listing{columns: labels, alt: alt}
		for _, it := range items {
			row := rowOf(it, cols)
			for i, f := range cols {
				if f == "extra" || f == "properties" {
					row[i] = formatDict(row[i])
				}
			}
			l.rows = append(l.rows, row)
		}
		return out.writeList(a.env.Stdout, l)
	})
	return cmd
}

func (a *app) volumeShowCmd(k *volumeKind) *cobra.Command {
	var out outputOpts
	cmd := &cobra.Command{Use: "show <id>", Short: "Show baremetal volume " + k.name + " details", Args: cobra.MinimumNArgs(1)}
	fields := newMultiArg(cmd.Flags(), "fields", "one or more volume "+k.name+" fields; only these are fetched")
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := fields.take(args)
		if len(rest) != 1 {
			return usageErrorf("expected one <id>, got %d arguments", len(rest))
		}
		q := url.Values{}
		if len(fl) > 0 {
			q.Set("fields", strings.Join(fl, ","))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		var v map[string]any
		if err := c.Get(ctx, k.path(rest[0]), q, &v); err != nil {
			return err
		}
		return out.writeOne(a.env.Stdout, recordOf(v))
	})
	return cmd
}

// volumeSetCmd is `set` (unset false) or `unset`: JSON patches of the
// string fields, the boot index and the key=value dicts.
func (a *app) volumeSetCmd(k *volumeKind, unset bool) *cobra.Command {
	verb, short := "set", "Set baremetal volume "+k.name+" properties"
	if unset {
		verb, short = "unset", "Unset baremetal volume "+k.name+" properties"
	}
	cmd := &cobra.Command{Use: verb + " <id> [options]", Short: short, Args: cobra.ExactArgs(1)}
	var o *volumeOpts
	var keys map[string]*[]string
	if unset {
		keys = map[string]*[]string{}
		for _, d := range k.dicts {
			keys[d[0]] = cmd.Flags().StringArray(d[0], nil, d[1]+" key to unset (repeatable)")
		}
	} else {
		o = k.addOpts(cmd, "set")
	}
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var ops []patchOp
		if !unset {
			if ops, err = o.patch(ctx, c, k, cmd); err != nil {
				return err
			}
		}
		for _, d := range k.dicts {
			if unset {
				ops = removeKeys(ops, "/"+d[1], *keys[d[0]])
			} else if ops, err = addKV(ops, "/"+d[1], *o.dicts[d[0]]); err != nil {
				return err
			}
		}
		if len(ops) == 0 {
			fmt.Fprintf(a.env.Stderr, "Please specify what to %s.\n", verb)
			return nil
		}
		return c.Do(ctx, Request{Method: http.MethodPatch, Path: k.path(args[0]), Body: ops}, nil)
	})
	return cmd
}

// scalars are the node-less scalar options given, by field: strings as
// given, the boot index an integer (not negative).
func (o *volumeOpts) scalars(k *volumeKind, cmd *cobra.Command) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range k.strs {
		switch {
		case s[0] == "boot-index" && cmd.Flags().Changed(s[0]):
			if o.bootIndex < 0 {
				return nil, usageErrorf("Expected non-negative --boot-index, got %d", o.bootIndex)
			}
			out[s[1]] = o.bootIndex
		case s[0] != "boot-index" && *o.strs[s[0]] != "":
			out[s[1]] = *o.strs[s[0]]
		}
	}
	return out, nil
}

// patch is the "add" operations of set's node and scalar options, in
// python-ironicclient's order.
func (o *volumeOpts) patch(ctx context.Context, c *Client, k *volumeKind, cmd *cobra.Command) ([]patchOp, error) {
	var ops []patchOp
	if o.node != "" {
		id, err := nodeUUID(ctx, c, o.node)
		if err != nil {
			return nil, err
		}
		ops = append(ops, patchOp{Op: "add", Path: "/node_uuid", Value: id})
	}
	vals, err := o.scalars(k, cmd)
	if err != nil {
		return nil, err
	}
	for _, s := range k.strs {
		if v, ok := vals[s[1]]; ok {
			ops = append(ops, patchOp{Op: "add", Path: "/" + s[1], Value: v})
		}
	}
	return ops, nil
}

func (a *app) volumeDeleteCmd(k *volumeKind) *cobra.Command {
	cmd := &cobra.Command{Use: "delete <id> [<id> ...]", Short: "Delete volume " + k.name + "(s)", Args: cobra.MinimumNArgs(1)}
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var failures []string
		for _, id := range args {
			if err := c.Do(ctx, Request{Method: http.MethodDelete, Path: k.path(id)}, nil); err != nil {
				if errors.Is(err, context.Canceled) {
					return err
				}
				failures = append(failures, fmt.Sprintf("Failed to delete volume %s %s: %s", k.name, id, errorLine(err)))
				continue
			}
			fmt.Fprintf(a.env.Stdout, "Deleted volume %s %s\n", k.name, id)
		}
		if len(failures) > 0 {
			return errors.New(strings.Join(failures, "\n"))
		}
		return nil
	})
	return cmd
}
