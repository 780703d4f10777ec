package conductor

import (
	"context"
	"errors"
	"slices"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/store"
)

// Runbooks (Ironic's runbook, API 1.92) are not tied to a node, so they
// change without a node lock; a provision request naming one
// (ProvisionRequest.Runbook) reads it under the node's lock and runs its
// steps as the manual clean or service steps (withRunbook).

// Minor versions at which disable_ramdisk is accepted, by verb.
const (
	minorCleanNoRamdisk   = 70
	minorServiceNoRamdisk = 108
)

func getRunbook(ctx context.Context, st Store, ident string) (*model.Runbook, error) {
	r, err := st.Runbooks().GetRunbook(ctx, ident)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fault.Missing("Runbook", ident)
	}
	return r, err
}

// withRunbook is Ironic's _handle_runbook (before 1.112): the runbook
// named by req.Runbook must be one of the node's traits; its steps become
// the request's clean or service steps, which must not be given too, and
// its disable_ramdisk replaces the request's, then checked as Ironic's
// check_allow_disable_ramdisk does (so a runbook with another verb is
// refused, and servicing by runbook needs 1.108). Errors: fault NotFound,
// Invalid, NotAcceptable.
// minorRunbookTraits is the version from which a node may run a runbook
// it shares a trait with (Ironic's MINOR_112_RUNBOOK_TRAITS); below it, the
// runbook's name must be one of the node's traits.
const minorRunbookTraits = 112

func withRunbook(ctx context.Context, st Store, n *model.Node, req ProvisionRequest, event string) (ProvisionRequest, error) {
	r, err := getRunbook(ctx, st, req.Runbook)
	if err != nil {
		return req, err
	}
	bad := func(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }
	switch {
	case req.Minor >= minorRunbookTraits:
		// 1.112: the node needs one of the runbook's traits.
		if len(r.Traits) == 0 {
			return req, bad("Runbook %s has no traits configured. Please ask an administrator to add traits to the runbook.", r.UUID)
		}
		if !slices.ContainsFunc(r.Traits, func(t string) bool { return slices.Contains(n.Traits, t) }) {
			sorted := slices.Sorted(slices.Values(r.Traits))
			return req, bad("This runbook has not been approved for use on this node %s. The node does not have "+
				"any of the runbook's traits %s. Please ask an administrator to add a matching trait to your node.",
				n.UUID, pyrepr.Strings(slices.Compact(sorted)))
		}
	case !slices.Contains(n.Traits, r.Name):
		return req, bad("This runbook has not been approved for use on this node %s. "+
			"Please ask an administrator to add it to your node traits.", n.UUID)
	}
	switch event {
	case fsm.EvClean:
		if len(req.CleanSteps) > 0 {
			return req, bad("Please provide either \"clean_steps\" or a runbook, but not both.")
		}
		req.CleanSteps = RunbookSteps(r)
	case fsm.EvService:
		if len(req.ServiceSteps) > 0 {
			return req, bad("Please provide either \"service_steps\" or a runbook, but not both.")
		}
		req.ServiceSteps = RunbookSteps(r)
	}
	disable := r.DisableRamdisk
	req.DisableRamdisk = &disable
	return req, CheckDisableRamdisk(event, req.DisableRamdisk, req.Minor)
}

// RunbookSteps are a runbook's steps as user steps (Ironic's
// convert_steps): interface, step, args and order, in the runbook's order.
func RunbookSteps(r *model.Runbook) []model.JSON {
	out := make([]model.JSON, len(r.Steps))
	for i, s := range r.Steps {
		args := map[string]any(s.Args)
		if args == nil {
			args = map[string]any{}
		}
		out[i] = model.JSON{"interface": s.Interface, "step": s.Step, "args": args, "order": float64(s.Order)}
	}
	return out
}

// CheckDisableRamdisk is Ironic's check_allow_disable_ramdisk: a
// disable_ramdisk (set, true or false) needs manual cleaning (1.70) or
// servicing (1.108). minor 0 applies no version gate.
func CheckDisableRamdisk(event string, v *bool, minor int) error {
	if v == nil {
		return nil
	}
	switch event {
	case fsm.EvClean, fsm.EvService:
		need := minorCleanNoRamdisk
		if event == fsm.EvService {
			need = minorServiceNoRamdisk
		}
		if minor > 0 && minor < need {
			return fault.New(fault.NotAcceptable, "disable_ramdisk is not acceptable in this API version")
		}
		return nil
	}
	return fault.New(fault.Invalid, "disable_ramdisk is supported only with manual cleaning or servicing")
}
