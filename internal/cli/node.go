package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// nodePath is the API path of a node named by UUID or name.
func nodePath(ident string, sub ...string) string {
	p := "/v1/nodes/" + url.PathEscape(ident)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// nodeLinkKeys are dropped from a node before printing, as the client does.
var nodeLinkKeys = []string{"ports", "portgroups", "states", "volume"}

// nodeRecord prepares a node for `show`-style output.
func nodeRecord(n map[string]any, fields []string) record {
	if len(fields) == 0 || slices.Contains(fields, "chassis_uuid") {
		if _, ok := n["chassis_uuid"]; !ok {
			n["chassis_uuid"] = ""
		}
	}
	return recordOf(n, nodeLinkKeys...)
}

func (a *app) nodeCmd() *cobra.Command {
	return group("node", "Manage bare-metal nodes",
		a.nodeCreateCmd(), a.nodeListCmd(), a.nodeShowCmd(), a.nodeSetCmd(), a.nodeUnsetCmd(),
		a.nodeDeleteCmd(), a.nodeValidateCmd(), a.nodePowerCmd(), a.nodeRebootCmd(),
		a.nodeMaintenanceCmd(), a.nodeBootCmd(), a.nodeHistoryCmd(), a.nodeWaitCmd(), a.nodeWatchCmd(),
		a.nodeConsoleCmd(), a.nodeConsoleLogCmd(), a.nodeDiagnoseCmd(),
		a.provisionCmd(verbManage), a.provisionCmd(verbProvide), a.provisionCmd(verbInspect),
		a.provisionCmd(verbClean), a.provisionCmd(verbDeploy), a.provisionCmd(verbUndeploy),
		a.provisionCmd(verbRebuild), a.provisionCmd(verbAbort), a.provisionCmd(verbAdopt),
		a.provisionCmd(verbRescue), a.provisionCmd(verbUnrescue), a.provisionCmd(verbUnhold),
		a.provisionCmd(verbService),
	)
}

// nodeCreateOpts are the options of `node create`.
type nodeCreateOpts struct {
	out                                     outputOpts
	driver, name, uuid, chassis, rc, cgroup string
	owner, lessee, description, networkData string
	driverInfo, properties, extra, instInfo []string
	ifaces                                  map[string]*string
	automatedClean, noAutomatedClean        bool
}

func (a *app) nodeCreateCmd() *cobra.Command {
	o := &nodeCreateOpts{ifaces: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "create --driver <driver> [options]",
		Short: "Register a new node with the baremetal service",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.driver, "driver", "", "driver used to control the node [REQUIRED]")
	f.StringVar(&o.name, "name", "", "unique name for the node")
	f.StringVar(&o.uuid, "uuid", "", "unique UUID for the node")
	f.StringVar(&o.chassis, "chassis-uuid", "", "UUID of the chassis that this node belongs to")
	f.StringArrayVar(&o.driverInfo, "driver-info", nil, "key=value used by the driver, such as BMC credentials (repeatable)")
	f.StringArrayVar(&o.properties, "property", nil, "key=value describing the node's hardware (repeatable)")
	f.StringArrayVar(&o.extra, "extra", nil, "key=value of arbitrary metadata (repeatable)")
	f.StringArrayVar(&o.instInfo, "instance-info", nil, "key=value of instance information (repeatable)")
	f.StringVar(&o.rc, "resource-class", "", "resource class for mapping nodes to flavors")
	f.StringVar(&o.cgroup, "conductor-group", "", "conductor group the node will belong to")
	f.StringVar(&o.owner, "owner", "", "owner of the node")
	f.StringVar(&o.lessee, "lessee", "", "lessee of the node")
	f.StringVar(&o.description, "description", "", "description for the node")
	f.StringVar(&o.networkData, "network-data", "", "static network configuration: JSON, @file, a file path or - for stdin")
	f.BoolVar(&o.automatedClean, "automated-clean", false, "enable automated cleaning for the node")
	f.BoolVar(&o.noAutomatedClean, "no-automated-clean", false, "explicitly disable automated cleaning for the node")
	for _, i := range supportedIfaces {
		o.ifaces[i] = f.String(i+"-interface", "", i+" interface used by the node's driver")
	}
	_ = cmd.MarkFlagRequired("driver")
	cmd.MarkFlagsMutuallyExclusive("automated-clean", "no-automated-clean")
	addShowOutput(cmd, &o.out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
		body, err := o.body(a)
		if err != nil {
			return err
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		var node map[string]any
		if err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/nodes", Body: body}, &node); err != nil {
			return withEnabledDrivers(ctx, c, err)
		}
		return o.out.writeOne(a.env.Stdout, nodeRecord(node, nil))
	})
	return cmd
}

func (o *nodeCreateOpts) body(a *app) (map[string]any, error) {
	body := map[string]any{"driver": o.driver}
	for k, v := range map[string]string{"name": o.name, "uuid": o.uuid, "chassis_uuid": o.chassis,
		"resource_class": o.rc, "conductor_group": o.cgroup, "owner": o.owner, "lessee": o.lessee,
		"description": o.description} {
		if v != "" {
			body[k] = v
		}
	}
	for i, v := range o.ifaces {
		if *v != "" {
			body[i+"_interface"] = *v
		}
	}
	for k, pairs := range map[string][]string{"driver_info": o.driverInfo, "properties": o.properties,
		"extra": o.extra, "instance_info": o.instInfo} {
		m, err := kvMap(pairs)
		if err != nil {
			return nil, err
		}
		if m != nil {
			body[k] = m
		}
	}
	if o.automatedClean || o.noAutomatedClean {
		body["automated_clean"] = o.automatedClean
	}
	if o.networkData != "" {
		nd, err := jsonArg(o.networkData, "static network configuration", a.env.Stdin)
		if err != nil {
			return nil, err
		}
		body["network_data"] = nd
	}
	return body, nil
}

// nodeListOpts are the options of `node list`.
type nodeListOpts struct {
	out                                       outputOpts
	limit                                     int
	marker, sort, fault, state, driver, rc    string
	cgroup, conductor, chassis, owner, lessee string
	descContains                              string
	maint, noMaint, retired, noRetired, long  bool
	associated, unassociated                  bool
	fields                                    *multiArg
}

func (a *app) nodeListCmd() *cobra.Command {
	o := &nodeListOpts{}
	cmd := &cobra.Command{Use: "list [options]", Short: "List baremetal nodes", Args: cobra.ArbitraryArgs}
	f := cmd.Flags()
	f.IntVar(&o.limit, "limit", -1, "maximum number of nodes to return, 0 for no limit")
	f.StringVar(&o.marker, "marker", "", "node UUID after which the list starts")
	f.StringVar(&o.sort, "sort", "", "sort output by fields: <key>[:asc|desc],...")
	f.BoolVar(&o.maint, "maintenance", false, "limit list to nodes in maintenance mode")
	f.BoolVar(&o.noMaint, "no-maintenance", false, "limit list to nodes not in maintenance mode")
	f.BoolVar(&o.retired, "retired", false, "limit list to retired nodes")
	f.BoolVar(&o.noRetired, "no-retired", false, "limit list to not retired nodes")
	f.StringVar(&o.fault, "fault", "", "list nodes in specified fault")
	f.BoolVar(&o.associated, "associated", false, "list only nodes associated with an instance")
	f.BoolVar(&o.unassociated, "unassociated", false, "list only nodes not associated with an instance")
	f.StringVar(&o.state, "provision-state", "", "list nodes in specified provision state")
	f.StringVar(&o.driver, "driver", "", "limit list to nodes with this driver")
	f.StringVar(&o.rc, "resource-class", "", "limit list to nodes with this resource class")
	f.StringVar(&o.cgroup, "conductor-group", "", "limit list to nodes with this conductor group")
	f.StringVar(&o.conductor, "conductor", "", "limit list to nodes with this conductor")
	f.StringVar(&o.chassis, "chassis", "", "limit list to nodes of this chassis")
	f.StringVar(&o.owner, "owner", "", "limit list to nodes with this owner")
	f.StringVar(&o.lessee, "lessee", "", "limit list to nodes with this lessee")
	f.StringVar(&o.descContains, "description-contains", "", "limit list to nodes whose description contains this")
	f.BoolVar(&o.long, "long", false, "show detailed information about the nodes")
	o.fields = newMultiArg(f, "fields", "one or more node fields; only these are fetched")
	cmd.MarkFlagsMutuallyExclusive("maintenance", "no-maintenance")
	cmd.MarkFlagsMutuallyExclusive("retired", "no-retired")
	cmd.MarkFlagsMutuallyExclusive("associated", "unassociated")
	cmd.MarkFlagsMutuallyExclusive("long", "fields")
	_ = cmd.RegisterFlagCompletionFunc("provision-state", completeStates)
	addListOutput(cmd, &o.out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fields, rest := o.fields.take(args)
		if len(rest) > 0 {
			return usageErrorf("unrecognized arguments: %s", strings.Join(rest, " "))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		l, err := o.list(ctx, c, fields)
		if err != nil {
			return err
		}
		return o.out.writeList(a.env.Stdout, l)
	})
	return cmd
}

func (o *nodeListOpts) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"provision_state": o.state, "driver": o.driver,
		"resource_class": o.rc, "conductor_group": o.cgroup, "conductor": o.conductor,
		"chassis_uuid": o.chassis, "owner": o.owner, "lessee": o.lessee,
		"description_contains": o.descContains, "fault": o.fault, "marker": o.marker} {
		if v != "" {
			q.Set(k, v)
		}
	}
	setBool := func(key string, yes, no bool) {
		if yes || no {
			q.Set(key, strconv.FormatBool(yes))
		}
	}
	setBool("maintenance", o.maint, o.noMaint)
	setBool("retired", o.retired, o.noRetired)
	setBool("associated", o.associated, o.unassociated)
	return q
}

// checkNodeFields refuses a --fields name a node does not show. What it
// shows is the API's node field table (python-ironicclient's list lacks
// the fields newer than it).
func checkNodeFields(fields []string) error {
	allowed, _ := api.NodeFields()
	for _, f := range fields {
		if !slices.Contains(allowed, f) {
			return usageErrorf("argument --fields: invalid choice: %s", pyrepr.Quote(f))
		}
	}
	return nil
}

func (o *nodeListOpts) list(ctx context.Context, c *Client, fields []string) (listing, error) {
	if o.limit < -1 {
		return listing{}, usageErrorf("Expected non-negative --limit, got %d", o.limit)
	}
	q := o.query()
	path, cols := "/v1/nodes", nodeListFields
	switch {
	case o.long:
		path, cols = "/v1/nodes/detail", nodeDetailFields
	case len(fields) > 0:
		if err := checkNodeFields(fields); err != nil {
			return listing{}, err
		}
		cols = fields
		q.Set("fields", strings.Join(fields, ","))
	}
	nodes, err := c.List(ctx, path, "nodes", q, max(o.limit, 0))
	if err != nil {
		return listing{}, err
	}
	if err := sortItems(nodes, o.sort); err != nil {
		return listing{}, err
	}
	labels, alt := labelled(cols)
	l := listing{columns: labels, alt: alt}
	for _, n := range nodes {
		l.rows = append(l.rows, rowOf(n, cols))
	}
	return l, nil
}

// sortItems is osc-lib's sort_items: "key[:asc|desc],..." applied from the
// last key to the first with a stable sort.
func sortItems(items []map[string]any, spec string) error {
	if strings.TrimSpace(spec) == "" {
		return nil
	}
	keys := strings.Split(strings.TrimSpace(spec), ",")
	for i := len(keys) - 1; i >= 0; i-- {
		key, dir, hasDir := strings.Cut(keys[i], ":")
		if key == "" {
			return usageErrorf("empty string is not a valid sort key")
		}
		if hasDir && dir != "asc" && dir != "desc" {
			if dir == "" {
				dir = "empty string"
			}
			return usageErrorf("%s is not a valid sort direction for sort key %s, use asc or desc instead", dir, key)
		}
		for _, it := range items {
			if _, ok := it[key]; !ok {
				return usageErrorf("Resource doesn't have field %s", key)
			}
		}
		slices.SortStableFunc(items, func(x, y map[string]any) int {
			c := compareValues(x[key], y[key])
			if dir == "desc" {
				return -c
			}
			return c
		})
	}
	return nil
}

// compareValues orders JSON values: null first, then by type's order.
func compareValues(x, y any) int {
	if x == nil || y == nil {
		switch {
		case x == nil && y == nil:
			return 0
		case x == nil:
			return -1
		default:
			return 1
		}
	}
	if xn, ok := numberOf(x); ok {
		if yn, ok := numberOf(y); ok {
			switch {
			case xn < yn:
				return -1
			case xn > yn:
				return 1
			}
			return 0
		}
	}
	return strings.Compare(pyrepr.Str(x), pyrepr.Str(y))
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	default:
		if n, ok := v.(interface{ Float64() (float64, error) }); ok {
			f, err := n.Float64()
			return f, err == nil
		}
	}
	return 0, false
}

func (a *app) nodeShowCmd() *cobra.Command {
	var out outputOpts
	var byInstance bool
	cmd := &cobra.Command{Use: "show <node>", Short: "Show baremetal node details",
		Args: cobra.MinimumNArgs(1), ValidArgsFunction: a.completeNodes}
	fields := newMultiArg(cmd.Flags(), "fields", "one or more node fields; only these are fetched")
	cmd.Flags().BoolVar(&byInstance, "instance", false, "<node> is an instance UUID")
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		fl, rest := fields.take(args)
		if len(rest) != 1 {
			return usageErrorf("expected one <node>, got %d arguments", len(rest))
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		q := url.Values{}
		if len(fl) > 0 {
			q.Set("fields", strings.Join(fl, ","))
		}
		node, err := getNode(ctx, c, rest[0], byInstance, q)
		if err != nil {
			return err
		}
		return out.writeOne(a.env.Stdout, nodeRecord(node, fl))
	})
	return cmd
}

// getNode fetches one node by UUID or name (or instance UUID).
func getNode(ctx context.Context, c *Client, ident string, byInstance bool, q url.Values) (map[string]any, error) {
	if !byInstance {
		var node map[string]any
		return node, c.Get(ctx, nodePath(ident), q, &node)
	}
	q = cloneValues(q)
	q.Set("instance_uuid", ident)
	path := "/v1/nodes/detail"
	if q.Has("fields") {
		path = "/v1/nodes"
	}
	nodes, err := c.List(ctx, path, "nodes", q, 0)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, &APIError{Status: http.StatusNotFound, Message: fault.MissingText("Node with instance", ident)}
	}
	return nodes[0], nil
}

// nodeUUID resolves a node name or UUID to its UUID.
func nodeUUID(ctx context.Context, c *Client, ident string) (string, error) {
	var n struct {
		UUID string `json:"uuid"`
	}
	if err := c.Get(ctx, nodePath(ident), url.Values{"fields": {"uuid"}}, &n); err != nil {
		return "", err
	}
	if n.UUID == "" {
		return "", fmt.Errorf("node %s: the API returned no uuid", ident)
	}
	return n.UUID, nil
}

func (a *app) nodeDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete <node> [<node> ...]", Short: "Unregister baremetal node(s)",
		Args: cobra.MinimumNArgs(1), ValidArgsFunction: a.completeNodes}
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var failures []string
		for _, n := range args {
			if err := c.Do(ctx, Request{Method: http.MethodDelete, Path: nodePath(n)}, nil); err != nil {
				if errors.Is(err, context.Canceled) {
					return err
				}
				failures = append(failures, fmt.Sprintf("Failed to delete node %s: %s", n, errorLine(err)))
				continue
			}
			fmt.Fprintf(a.env.Stdout, "Deleted node %s\n", n)
		}
		if len(failures) > 0 {
			return errors.New(strings.Join(failures, "\n"))
		}
		return nil
	})
	return cmd
}
