package conductor

import (
	"context"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Provision applies a provision verb under the node's lock: the checks that
// depend on the node (maintenance, the state machine, the arguments, the
// concurrency caps), the transition saved before returning, and the work
// handed to a worker. The verb's microversion gate is the API's
// (internal/api gateProvision); req.Minor is read here only for the abort
// gates that depend on the node's state.
func (c *Conductor) Provision(ctx context.Context, ident string, req ProvisionRequest) error {
	// As Ironic's API does, a request the node's current state refuses is
	// answered at once, without waiting for a busy node's lock: 409 while
	// someone works on the node, else the refusal. The same check under
	// the lock below is the one that decides.
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return err
	}
	if _, err := c.checkRequest(ctx, n, req); err != nil {
		if n.Reservation != "" && !fsm.Allowed(n.ProvisionState, eventOf(req.Target)) {
			return fault.NodeLocked(n.UUID, n.Reservation)
		}
		return err
	}
	t, err := c.acquire(ctx, ident, req.User)
	if err != nil {
		return err
	}
	if req, err = c.checkProvision(ctx, t.node, req); err != nil {
		t.release()
		return err
	}
	if err := c.start(ctx, t, eventOf(req.Target), req); err != nil {
		t.release()
		return err
	}
	return nil
}

// eventOf is the machine event a provision target raises; a target that is
// no verb is taken as an event name, which the machine then refuses.
func eventOf(target string) string {
	if v, ok := fsm.LookupVerb(target); ok {
		return v.Event
	}
	return target
}

// checkProvision is every check of a provision request against the locked
// node, in Ironic's order: maintenance for deploys, the state machine (the
// one legality check), the runbook, the arguments, then the concurrency
// caps. It returns the request to carry out: a runbook's steps in place.
func (c *Conductor) checkProvision(ctx context.Context, n *model.Node, req ProvisionRequest) (ProvisionRequest, error) {
	req, err := c.checkRequest(ctx, n, req)
	if err != nil {
		return req, err
	}
	return req, c.checkLimit(ctx, eventOf(req.Target))
}

// checkRequest is checkProvision without the concurrency caps: what the
// node's state, the runbook and the request's arguments decide.
func (c *Conductor) checkRequest(ctx context.Context, n *model.Node, req ProvisionRequest) (ProvisionRequest, error) {
	event := eventOf(req.Target)
	if (event == fsm.EvDeploy || event == fsm.EvRebuild) && n.Maintenance {
		return req, inMaintenance(n.UUID)
	}
	if !fsm.Allowed(n.ProvisionState, event) {
		return req, fault.InvalidState(req.Target, n.UUID, n.ProvisionState)
	}
	if req.Runbook != "" {
		var err error
		if req, err = withRunbook(ctx, c.store, n, req, event); err != nil {
			return req, err
		}
	}
	return req, checkProvisionArgs(n, req, event)
}

func inMaintenance(uuid string) error {
	return fault.New(fault.Invalid, "The provisioning operation can't be performed on node %s because it's in maintenance mode.", uuid)
}

func checkProvisionArgs(n *model.Node, req ProvisionRequest, event string) error {
	bad := func(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }
	if req.ConfigDrive != nil && event != fsm.EvDeploy && event != fsm.EvRebuild {
		return bad("Adding a config drive is only supported when setting provision state to active, rebuild, deploy")
	}
	if req.Runbook != "" && (len(req.CleanSteps) > 0 && event != fsm.EvClean || len(req.ServiceSteps) > 0 && event != fsm.EvService) {
		return bad("\"runbooks\" is only valid when setting target provision state to any of ['clean', 'service']")
	}
	if len(req.CleanSteps) > 0 && event != fsm.EvClean {
		return bad("\"clean_steps\" is only valid when setting target provision state to clean")
	}
	if len(req.DeploySteps) > 0 && event != fsm.EvDeploy && event != fsm.EvRebuild {
		return bad("\"deploy_steps\" is only valid when setting target provision state to active or rebuild")
	}
	if req.RescuePassword != nil && event != fsm.EvRescue {
		return bad("\"rescue_password\" is only valid when setting target provision state to rescue")
	}
	if len(req.ServiceSteps) > 0 && event != fsm.EvService {
		return bad("\"service_steps\" is only valid when setting target provision state to service")
	}
	if req.DisableRamdisk != nil && event != fsm.EvClean && event != fsm.EvService {
		return bad("\"disable_ramdisk\" can be passed only with \"clean_steps\" or \"service_steps\"")
	}
	switch event {
	case fsm.EvClean:
		if len(req.CleanSteps) == 0 {
			return bad("\"clean_steps\" is required when setting target provision state to clean")
		}
		// the shape of clean and service steps is Ironic's API schema,
		// checked by the API (internal/api: checkStepSchema)
	case fsm.EvService:
		if len(req.ServiceSteps) == 0 {
			return bad("\"service_steps\" is required when setting target provision state to service")
		}
	case fsm.EvDeploy, fsm.EvRebuild:
		return checkSteps("deploy_steps", req.DeploySteps)
	case fsm.EvRescue:
		if req.RescuePassword == nil || strings.TrimSpace(*req.RescuePassword) == "" {
			return bad("A non-empty \"rescue_password\" is required when setting target provision state to rescue")
		}
	case fsm.EvAbort:
		// The minor versions that gate an abort depend on the state it
		// aborts, so they are checked here rather than in the API.
		if op := operationIn(n.ProvisionState); op != nil && n.ProvisionState == op.wait && req.Minor > 0 && req.Minor < op.abortMinor {
			return fault.NotAcceptableVersion()
		}
	}
	return nil
}

// checkSteps validates the shape of user steps: interface and step are
// required strings, args an object, priority an integer.
func checkSteps(field string, steps []model.JSON) error {
	for i, s := range steps {
		iface, ok1 := s["interface"].(string)
		name, ok2 := s["step"].(string)
		if !ok1 || !ok2 || iface == "" || name == "" {
			return fault.New(fault.Invalid, "Invalid %s: step %d must have string \"interface\" and \"step\" fields", field, i)
		}
		if !validStepInterface(iface) {
			return fault.New(fault.Invalid, "Invalid %s: step %d: %q is not a driver interface", field, i, iface)
		}
		if a, ok := s["args"]; ok && a != nil {
			if _, ok := a.(map[string]any); !ok {
				return fault.New(fault.Invalid, "Invalid %s: step %d: \"args\" must be an object", field, i)
			}
		}
		if p, ok := s["priority"]; ok {
			if f, ok := p.(float64); !ok || f != float64(int(f)) || f < 0 {
				return fault.New(fault.Invalid, "Invalid %s: step %d: \"priority\" must be a non-negative integer", field, i)
			}
		}
		for k := range s {
			switch k {
			case "interface", "step", "args", "priority":
			default:
				return fault.New(fault.Invalid, "Invalid %s: step %d has unknown field %q", field, i, k)
			}
		}
	}
	return nil
}

func validStepInterface(iface string) bool {
	for _, k := range model.InterfaceNames {
		if k == iface {
			return true
		}
	}
	return false
}
