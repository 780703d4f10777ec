package cli

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// verb is a provision-state command: its name, the API target it sends
// (python-ironicclient keeps the old words: deploy sends "active"), the
// state --wait waits for ("" when it cannot wait) and its help line.
type verb struct {
	name, target, expect, short string
}

var (
	verbManage   = verb{"manage", "manage", "manageable", "Set provision state of baremetal node to 'manage'"}
	verbProvide  = verb{"provide", "provide", "available", "Set provision state of baremetal node to 'provide'"}
	verbInspect  = verb{"inspect", "inspect", "manageable", "Set provision state of baremetal node to 'inspect'"}
	verbClean    = verb{"clean", "clean", "manageable", "Set provision state of baremetal node to 'clean'"}
	verbDeploy   = verb{"deploy", "active", "active", "Set provision state of baremetal node to 'deploy'"}
	verbUndeploy = verb{"undeploy", "deleted", "available", "Set provision state of baremetal node to 'deleted'"}
	verbRebuild  = verb{"rebuild", "rebuild", "active", "Set provision state of baremetal node to 'rebuild'"}
	verbAbort    = verb{"abort", "abort", "", "Set provision state of baremetal node to 'abort'"}
	verbAdopt    = verb{"adopt", "adopt", "active", "Set provision state of baremetal node to 'adopt'"}
	verbRescue   = verb{"rescue", "rescue", "rescue", "Set provision state of baremetal node to 'rescue'"}
	verbUnrescue = verb{"unrescue", "unrescue", "active", "Set provision state of baremetal node to 'unrescue'"}
	verbUnhold   = verb{"unhold", "unhold", "", "Set provision state of baremetal node to 'unhold' (API 1.85)"}
	verbService  = verb{"service", "service", "active", "Set provision state of baremetal node to 'service' (API 1.87)"}
)

// action is one operation a command applies to each node it is given.
type action struct {
	name string // for progress and results ("manage", "power on")
	do   func(ctx context.Context, c *Client, node string) error
	want Want // what --wait waits for (empty: no --wait)
	// destructive actions (power off, reboot, undeploy, rebuild, clean,
	// rescue) ask before acting on several nodes on a terminal.
	destructive bool
}

// provisionCmd builds `node <verb>`.
func (a *app) provisionCmd(v verb) *cobra.Command {
	b := &batchOpts{}
	var cleanSteps, deploySteps, serviceSteps, configDrive, rescuePassword, runbook string
	var instInfo []string
	var disableRamdisk bool
	cmd := &cobra.Command{
		Use:               v.name + " <node> [<node> ...] [--all | selectors]",
		Short:             v.short,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: a.completeNodes,
	}
	f := cmd.Flags()
	switch v {
	case verbClean:
		f.StringVar(&cleanSteps, "clean-steps", "", "the clean steps: JSON, @file, a file path, or - for stdin (or --runbook)")
		f.StringVar(&runbook, "runbook", "", "the name or UUID of a runbook whose steps to run (API 1.92)")
		cmd.MarkFlagsOneRequired("clean-steps", "runbook")
		cmd.MarkFlagsMutuallyExclusive("clean-steps", "runbook")
		f.BoolVar(&disableRamdisk, "disable-ramdisk", false, "clean without booting the ramdisk (API 1.70)")
	case verbService:
		f.StringVar(&serviceSteps, "service-steps", "", "the service steps: JSON, @file, a file path, or - for stdin (or --runbook)")
		f.StringVar(&runbook, "runbook", "", "the name or UUID of a runbook whose steps to run (API 1.92)")
		cmd.MarkFlagsOneRequired("service-steps", "runbook")
		cmd.MarkFlagsMutuallyExclusive("service-steps", "runbook")
	case verbDeploy, verbRebuild:
		f.StringVar(&configDrive, "config-drive", "", "a config drive: gzipped base64 string, JSON object, or URL")
		f.StringVar(&deploySteps, "deploy-steps", "", "the deploy steps: JSON, @file, a file path, or - for stdin")
	case verbRescue:
		f.StringVar(&rescuePassword, "rescue-password", "", "the password to log in to the rescue ramdisk [REQUIRED]")
		_ = cmd.MarkFlagRequired("rescue-password")
	}
	if v == verbDeploy {
		f.StringArrayVar(&instInfo, "instance-info", nil, "instance_info key=value to set before deploying (repeatable)")
	}
	b.addFlags(cmd, v.expect != "")
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		body := map[string]any{"target": v.target}
		for _, s := range []struct{ flag, key, what string }{
			{cleanSteps, "clean_steps", "clean steps"}, {deploySteps, "deploy_steps", "deploy steps"},
			{serviceSteps, "service_steps", "service steps"}} {
			if s.flag == "" {
				continue
			}
			steps, err := jsonArg(s.flag, s.what, a.env.Stdin)
			if err != nil {
				return err
			}
			body[s.key] = steps
		}
		if configDrive != "" {
			body["configdrive"] = configDriveArg(configDrive)
		}
		if rescuePassword != "" {
			body["rescue_password"] = rescuePassword
		}
		if runbook != "" {
			body["runbook"] = runbook
		}
		if disableRamdisk {
			body["disable_ramdisk"] = true
		}
		var info []patchOp
		var err error
		if info, err = addKV(nil, "/instance_info", instInfo); err != nil {
			return err
		}
		act := action{name: v.name, want: Want{Provision: v.expect},
			destructive: v == verbUndeploy || v == verbRebuild || v == verbClean || v == verbRescue,
			do: func(ctx context.Context, c *Client, node string) error {
				if len(info) > 0 {
					if err := c.Do(ctx, Request{Method: http.MethodPatch, Path: nodePath(node), Body: info}, nil); err != nil {
						return err
					}
				}
				req := Request{Method: http.MethodPut, Path: nodePath(node, "states", "provision"), Body: body}
				if runbook != "" {
					// Runbooks are 1.92; Ironic gates servicing by one as it
					// gates disable_ramdisk, which the runbook sets: 1.108.
					req.MinVersion = map[string]string{"clean": "1.92", "service": "1.108"}[v.target]
				}
				return c.Do(ctx, req, nil)
			}}
		return a.execute(ctx, b, act, args)
	})
	return cmd
}

// configDriveArg sends a JSON object as an object, anything else as text.
func configDriveArg(s string) any {
	if v, ok := jsonOrString(s).(map[string]any); ok {
		return v
	}
	return s
}

// powerTargets maps python-ironicclient's power words to API targets.
var powerTargets = map[string]string{"on": "power on", "off": "power off", "reboot": "rebooting",
	"soft off": "soft power off", "soft reboot": "soft rebooting"}

// powerAction sets a node's power state.
func powerAction(word string, soft bool, timeout int) action {
	requested := word
	if soft {
		requested = "soft " + word
	}
	body := map[string]any{"target": powerTargets[requested]}
	if timeout > 0 {
		body["timeout"] = timeout
	}
	result := "power on"
	if word == "off" {
		result = "power off"
	}
	return action{name: "power " + word, want: Want{Power: result}, destructive: word != "on",
		do: func(ctx context.Context, c *Client, node string) error {
			return c.Do(ctx, Request{Method: http.MethodPut, Path: nodePath(node, "states", "power"), Body: body}, nil)
		}}
}

func (a *app) powerCmd(word, short string) *cobra.Command {
	b := &batchOpts{}
	var soft bool
	var timeout int
	cmd := &cobra.Command{Use: word + " <node> [<node> ...] [--all | selectors]", Short: short,
		Args: cobra.ArbitraryArgs, ValidArgsFunction: a.completeNodes}
	f := cmd.Flags()
	f.IntVar(&timeout, "power-timeout", 0, "timeout (seconds) for the conductor to reach the power state")
	if word != "on" {
		f.BoolVar(&soft, "soft", false, "request a graceful power-off or reboot")
	}
	b.addFlags(cmd, true)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("power-timeout") && timeout <= 0 {
			return usageErrorf("'timeout' option for setting power state must have positive integer value (> 0)")
		}
		return a.execute(ctx, b, powerAction(word, soft, timeout), args)
	})
	return cmd
}

func (a *app) nodePowerCmd() *cobra.Command {
	return group("power", "Power a node on or off, or show its power state",
		a.powerCmd("on", "Power on a node"), a.powerCmd("off", "Power off a node"), a.powerShowCmd())
}

func (a *app) nodeRebootCmd() *cobra.Command { return a.powerCmd("reboot", "Reboot baremetal node") }

func (a *app) powerShowCmd() *cobra.Command {
	var out outputOpts
	cmd := &cobra.Command{Use: "show <node>", Short: "Show the power state of a node",
		Args: cobra.ExactArgs(1), ValidArgsFunction: a.completeNodes}
	addShowOutput(cmd, &out)
	cmd.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		var st map[string]any
		if err := c.Get(ctx, nodePath(args[0], "states"), nil, &st); err != nil {
			return err
		}
		fields := []string{"power_state", "target_power_state"}
		return out.writeOne(a.env.Stdout, record{fields: fields, values: rowOf(st, fields), alt: fieldAlt(fields)})
	})
	return cmd
}

func (a *app) nodeMaintenanceCmd() *cobra.Command {
	setB, unsetB := &batchOpts{}, &batchOpts{}
	var reason string
	set := &cobra.Command{Use: "set <node> [<node> ...] [--reason <reason>]", Short: "Set baremetal node to maintenance mode",
		Args: cobra.ArbitraryArgs, ValidArgsFunction: a.completeNodes}
	set.Flags().StringVar(&reason, "reason", "", "reason for setting maintenance mode")
	setB.addFlags(set, false)
	set.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		body := map[string]any{}
		if cmd.Flags().Changed("reason") {
			body["reason"] = reason
		}
		return a.execute(ctx, setB, action{name: "maintenance set",
			do: func(ctx context.Context, c *Client, node string) error {
				return c.Do(ctx, Request{Method: http.MethodPut, Path: nodePath(node, "maintenance"), Body: body}, nil)
			}}, args)
	})
	unset := &cobra.Command{Use: "unset <node> [<node> ...]", Short: "Unset baremetal node from maintenance mode",
		Args: cobra.ArbitraryArgs, ValidArgsFunction: a.completeNodes}
	unsetB.addFlags(unset, false)
	unset.RunE = a.run(func(ctx context.Context, cmd *cobra.Command, args []string) error {
		return a.execute(ctx, unsetB, action{name: "maintenance unset",
			do: func(ctx context.Context, c *Client, node string) error {
				return c.Do(ctx, Request{Method: http.MethodDelete, Path: nodePath(node, "maintenance")}, nil)
			}}, args)
	})
	return group("maintenance", "Set or unset maintenance mode", set, unset)
}

// waitTimeout turns --wait's seconds into a duration (0: no limit).
func waitTimeout(s string) (time.Duration, error) {
	d, ok := parseSeconds(s)
	if !ok {
		return 0, usageErrorf("argument --wait: invalid int value: %s", pyrepr.Quote(s))
	}
	return d, nil
}

// parseSeconds reads a whole, non-negative number of seconds.
func parseSeconds(s string) (time.Duration, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}
