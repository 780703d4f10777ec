package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// nodeSetOpts are the options of `node set`.
type nodeSetOpts struct {
	strs                                    map[string]*string // field → value
	ifaces                                  map[string]*string
	resetIfaces                             map[string]*bool
	properties, extra, driverInfo, instInfo []string
	automatedClean, noAutomatedClean        bool
	protected, retired, resetInterfaces     bool
	raidConfig, networkData                 string
}

// nodeSetStringFlags maps `node set` string options to node fields.
var nodeSetStringFlags = [][3]string{
	{"instance-uuid", "instance_uuid", "set instance UUID of node to <uuid>"},
	{"name", "name", "set the name of the node"},
	{"chassis-uuid", "chassis_uuid", "set the chassis for the node"},
	{"driver", "driver", "set the driver for the node"},
	{"resource-class", "resource_class", "set the resource class for the node"},
	{"conductor-group", "conductor_group", "set the conductor group for the node"},
	{"protected-reason", "protected_reason", "set the reason of marking the node as protected"},
	{"retired-reason", "retired_reason", "set the reason of marking the node as retired"},
	{"owner", "owner", "set the owner for the node"},
	{"lessee", "lessee", "set the lessee for the node"},
	{"description", "description", "set the description for the node"},
}

func (a *app) nodeSetCmd() *cobra.Command {
	o := &nodeSetOpts{strs: map[string]*string{}, ifaces: map[string]*string{}, resetIfaces: map[string]*bool{}}
	cmd := &cobra.Command{Use: "set <node> [options]", Short: "Set baremetal properties",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	f := cmd.Flags()
	for _, s := range nodeSetStringFlags {
		o.strs[s[1]] = f.String(s[0], "", s[2])
	}
	for _, i := range supportedIfaces {
		o.ifaces[i] = f.String(i+"-interface", "", "set the "+i+" interface for the node")
		o.resetIfaces[i] = f.Bool("reset-"+i+"-interface", false, "reset the "+i+" interface to its hardware type default")
		cmd.MarkFlagsMutuallyExclusive(i+"-interface", "reset-"+i+"-interface")
	}
	f.BoolVar(&o.resetInterfaces, "reset-interfaces", false, "reset all interfaces not specified explicitly (only with --driver)")
	f.BoolVar(&o.automatedClean, "automated-clean", false, "enable automated cleaning for the node")
	f.BoolVar(&o.noAutomatedClean, "no-automated-clean", false, "explicitly disable automated cleaning for the node")
	f.BoolVar(&o.protected, "protected", false, "mark the node as protected")
	f.BoolVar(&o.retired, "retired", false, "mark the node as retired")
	f.StringVar(&o.raidConfig, "target-raid-config", "", "target RAID configuration: JSON, @file, a file path or -")
	f.StringArrayVar(&o.properties, "property", nil, "property key=value to set (repeatable)")
	f.StringArrayVar(&o.extra, "extra", nil, "extra key=value to set (repeatable)")
	f.StringArrayVar(&o.driverInfo, "driver-info", nil, "driver information key=value to set (repeatable)")
	f.StringArrayVar(&o.instInfo, "instance-info", nil, "instance information key=value to set (repeatable)")
	f.StringVar(&o.networkData, "network-data", "", "static network configuration: JSON, @file, a file path or -")
	cmd.MarkFlagsMutuallyExclusive("automated-clean", "no-automated-clean")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		ops, err := o.patch(a)
		if err != nil {
			return err
		}
		c, err := a.client()
		if err != nil {
			return err
		}
		// The RAID configuration first: the patch may rename the node.
		if o.raidConfig != "" {
			raid, err := jsonArg(o.raidConfig, "target_raid_config", a.env.Stdin)
			if err != nil {
				return err
			}
			if err := c.Do(ctx, Request{Method: http.MethodPut, Path: nodePath(args[0], "states", "raid"), Body: raid}, nil); err != nil {
				return err
			}
		}
		if len(ops) == 0 {
			if o.raidConfig == "" {
				fmt.Fprintln(a.env.Stderr, "Please specify what to set.")
			}
			return nil
		}
		q := url.Values{}
		if o.resetInterfaces {
			q.Set("reset_interfaces", "True")
		}
		return c.Do(ctx, Request{Method: http.MethodPatch, Path: nodePath(args[0]), Query: q, Body: ops}, nil)
	})
	return cmd
}

func (o *nodeSetOpts) patch(a *app) ([]patchOp, error) {
	var ops []patchOp
	if o.resetInterfaces && *o.strs["driver"] == "" {
		return nil, usageErrorf("--reset-interfaces can only be specified with --driver")
	}
	for _, s := range nodeSetStringFlags {
		if v := *o.strs[s[1]]; v != "" {
			ops = append(ops, patchOp{Op: "add", Path: "/" + s[1], Value: v})
		}
	}
	if o.protected {
		ops = append(ops, patchOp{Op: "add", Path: "/protected", Value: true})
	}
	if o.retired {
		ops = append(ops, patchOp{Op: "add", Path: "/retired", Value: true})
	}
	if o.automatedClean || o.noAutomatedClean {
		ops = append(ops, patchOp{Op: "add", Path: "/automated_clean", Value: o.automatedClean})
	}
	for _, i := range supportedIfaces {
		switch {
		case *o.ifaces[i] != "":
			ops = append(ops, patchOp{Op: "add", Path: "/" + i + "_interface", Value: *o.ifaces[i]})
		case *o.resetIfaces[i]:
			ops = append(ops, patchOp{Op: "remove", Path: "/" + i + "_interface"})
		}
	}
	var err error
	for _, kv := range []struct {
		prefix string
		pairs  []string
	}{{"/properties", o.properties}, {"/extra", o.extra}, {"/driver_info", o.driverInfo}, {"/instance_info", o.instInfo}} {
		if ops, err = addKV(ops, kv.prefix, kv.pairs); err != nil {
			return nil, err
		}
	}
	if o.networkData != "" {
		nd, err := jsonArg(o.networkData, "static network configuration", a.env.Stdin)
		if err != nil {
			return nil, err
		}
		ops = append(ops, patchOp{Op: "add", Path: "/network_data", Value: nd})
	}
	return ops, nil
}

// nodeUnsetFields are the `node unset` switches that remove a field.
var nodeUnsetFields = []string{"instance_uuid", "name", "chassis_uuid", "resource_class",
	"conductor_group", "automated_clean", "bios_interface", "boot_interface", "console_interface",
	"deploy_interface", "inspect_interface", "management_interface", "network_interface",
	"power_interface", "raid_interface", "rescue_interface", "storage_interface", "vendor_interface",
	"protected", "protected_reason", "retired", "retired_reason", "owner", "lessee", "description",
	"network_data"}

func (a *app) nodeUnsetCmd() *cobra.Command {
	fields := map[string]*bool{}
	var properties, extra, driverInfo, instInfo []string
	var raid bool
	cmd := &cobra.Command{Use: "unset <node> [options]", Short: "Unset baremetal properties",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	f := cmd.Flags()
	for _, name := range nodeUnsetFields {
		fields[name] = f.Bool(flagName(name), false, "unset "+name+" on this node")
	}
	f.BoolVar(&raid, "target-raid-config", false, "unset the target RAID configuration of the node")
	f.StringArrayVar(&properties, "property", nil, "property to unset (repeatable)")
	f.StringArrayVar(&extra, "extra", nil, "extra to unset (repeatable)")
	f.StringArrayVar(&driverInfo, "driver-info", nil, "driver information to unset (repeatable)")
	f.StringArrayVar(&instInfo, "instance-info", nil, "instance information to unset (repeatable)")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		if raid {
			if err := c.Do(ctx, Request{Method: http.MethodPut, Path: nodePath(args[0], "states", "raid"), Body: map[string]any{}}, nil); err != nil {
				return err
			}
		}
		var ops []patchOp
		for _, name := range nodeUnsetFields {
			if *fields[name] {
				ops = append(ops, patchOp{Op: "remove", Path: "/" + name})
			}
		}
		ops = removeKeys(ops, "/properties", properties)
		ops = removeKeys(ops, "/extra", extra)
		ops = removeKeys(ops, "/driver_info", driverInfo)
		ops = removeKeys(ops, "/instance_info", instInfo)
		if len(ops) == 0 {
			if !raid {
				fmt.Fprintln(a.env.Stderr, "Please specify what to unset.")
			}
			return nil
		}
		return c.Do(ctx, Request{Method: http.MethodPatch, Path: nodePath(args[0]), Body: ops}, nil)
	})
	return cmd
}

// flagName turns a field name into its option name.
func flagName(field string) string {
	b := []byte(field)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}
