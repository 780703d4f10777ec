package conductor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/anvil-metal/anvil/internal/driver"
)

// argsErrors checks the arguments of user steps (resolved into steps, in
// the same order) against each step's argsinfo, as Ironic's
// _validate_user_step: unexpected arguments, and missing required ones
// (deploy steps only when they have a priority). "" when all is well;
// steps without argsinfo are not checked.
func argsErrors(kind driver.StepKind, steps []driver.Step, user []map[string]any) string {
	var errs []string
	for i, s := range steps {
		if s.ArgsInfo == nil || i >= len(user) {
			continue
		}
		args, _ := user[i]["args"].(map[string]any)
		var unexpected []string
		for k := range args {
			if _, ok := s.ArgsInfo[k]; !ok {
				unexpected = append(unexpected, k)
			}
		}
		sort.Strings(unexpected)
		if len(unexpected) > 0 {
			errs = append(errs, fmt.Sprintf("%s step %s has these unexpected arguments: %s", kind, pyRepr(user[i]), strings.Join(unexpected, ", ")))
		}
		if kind == driver.DeploySteps && s.Priority <= 0 {
			continue
		}
		var missing []string
		for _, name := range slices.Sorted(maps.Keys(s.ArgsInfo)) {
			ai := s.ArgsInfo[name]
			if _, ok := args[name]; ai.Required && !ok {
				msg := name
				if ai.Description != "" {
					msg += " (" + ai.Description + ")"
				}
				missing = append(missing, msg)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Sprintf("%s step %s is missing these required arguments: %s", kind, pyRepr(user[i]), strings.Join(missing, ", ")))
		}
	}
	return strings.Join(errs, "; ")
}

// saveSettings stores what an interface read of the node's BIOS settings
// and firmware components (driver.Task.BIOS and Firmware). A failure is
// logged: the cache is refreshed the next time it is read.
func (t *task) saveSettings(ctx context.Context, dt *driver.Task) {
	c := t.c
	if dt.BIOS != nil {
		if err := c.store.Settings().SyncBIOSSettings(ctx, dt.Node.UUID, *dt.BIOS); err != nil {
			c.log.Error("caching BIOS settings failed", "node", dt.Node.UUID, "err", err)
		}
	}
	if dt.Firmware != nil {
		if err := c.store.Settings().SyncFirmwareComponents(ctx, dt.Node.UUID, *dt.Firmware); err != nil {
			c.log.Error("caching firmware components failed", "node", dt.Node.UUID, "err", err)
		}
	}
}

// cacheSettings has the node's bios and firmware interfaces read what the
// hardware has (Ironic's node_update_cache: after verifying, when cleaning
// and servicing start; firmware also after inspection, where Anvil reads
// the BIOS too); interfaces without driver.Cacher are skipped, failures
// are logged and never stop the flow.
func (t *task) cacheSettings(ctx context.Context) {
	c := t.c
	for _, kind := range []string{"bios", "firmware"} {
		ca, ok := t.drv.Interface(kind).(driver.Cacher)
		if !ok {
			continue
		}
		dt := t.driverTask(ctx)
		if err := ca.Cache(ctx, dt); err != nil {
			c.log.Warn("caching "+kind+" settings failed", "node", t.node.UUID, "err", err)
			continue
		}
		t.saveSettings(ctx, dt)
	}
}
