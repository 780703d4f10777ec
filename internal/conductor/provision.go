package conductor

import (
	"context"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// Minor versions that gate provision behaviour (Ironic's).
const (
	minorInspectAbort = 41
	minorDeployAbort  = 110
)

// Provision applies a provision verb: Ironic's API checks, then the lock, the
// transition saved before returning, and the work handed to a worker.
func (c *Conductor) Provision(ctx context.Context, ident string, req ProvisionRequest) error {
	n, err := c.getNode(ctx, ident)
	if err != nil {
		return err
	}
	verb, known := fsm.LookupVerb(req.Target)
	if known && req.Minor > 0 && !verb.AllowedAt(req.Minor) {
		return fault.NotAcceptableVersion()
	}
	event := req.Target
	if known {
		event = verb.Event
	}
	if (event == fsm.EvDeploy || event == fsm.EvRebuild) && n.Maintenance {
		return inMaintenance(n.UUID)
	}
	if err := checkActionable(n, req.Target, event); err != nil {
		return err
	}
	if err := checkProvisionArgs(n, req, event); err != nil {
		return err
	}
	if err := c.checkLimit(ctx, event); err != nil {
		return err
	}
	t, err := c.acquire(ctx, n.UUID, req.User)
	if err != nil {
		return err
	}
	// The state may have changed between the check above and the lock.
	if _, ok := fsm.Next(t.node.ProvisionState, event); !ok {
		t.release()
		return fault.InvalidState(req.Target, t.node.UUID, t.node.ProvisionState)
	}
	if err := c.start(ctx, t, event, req); err != nil {
		t.release()
		return err
	}
	return nil
}

func inMaintenance(uuid string) error {
	return fault.New(fault.Invalid, "The provisioning operation can't be performed on node %s because it's in maintenance mode.", uuid)
}

// checkActionable is Ironic's up-front state check: a forbidden event is 409
// while the node is locked (someone is working on it), 400 otherwise.
func checkActionable(n *model.Node, target, event string) error {
	if _, ok := fsm.Next(n.ProvisionState, event); ok {
		return nil
	}
	if n.Reservation != "" {
		return fault.NodeLocked(n.UUID, n.Reservation)
	}
	return fault.InvalidState(target, n.UUID, n.ProvisionState)
}

func checkProvisionArgs(n *model.Node, req ProvisionRequest, event string) error {
	bad := func(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }
	if req.ConfigDrive != nil && event != fsm.EvDeploy && event != fsm.EvRebuild {
		return bad("Adding a config drive is only supported when setting provision state to active, rebuild, deploy")
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
		return checkSteps("clean_steps", req.CleanSteps)
	case fsm.EvService:
		if len(req.ServiceSteps) == 0 {
			return bad("\"service_steps\" is required when setting target provision state to service")
		}
		return checkSteps("service_steps", req.ServiceSteps)
	case fsm.EvDeploy, fsm.EvRebuild:
		return checkSteps("deploy_steps", req.DeploySteps)
	case fsm.EvRescue:
		if req.RescuePassword == nil || strings.TrimSpace(*req.RescuePassword) == "" {
			return bad("A non-empty \"rescue_password\" is required when setting target provision state to rescue")
		}
	case fsm.EvAbort:
		if n.ProvisionState == fsm.InspectWait && req.Minor > 0 && req.Minor < minorInspectAbort {
			return fault.NotAcceptableVersion()
		}
		if n.ProvisionState == fsm.DeployWait && req.Minor > 0 && req.Minor < minorDeployAbort {
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
