package api

import (
	"math"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Minor versions gating state requests.
const (
	minorRaidConfig        = 12
	minorSoftPower         = 27
	minorRebuildConfigDrv  = 35
	minorBuildConfigDrive  = 56
	minorConfigDriveVendor = 59
	minorDeploySteps       = 69
	minorBootMode          = 75
	minorService           = 87
	minorRunbooks          = 92
)

// validateOrder is the order Ironic reports interfaces in: the core ones,
// then the optional ones.
var validateOrder = []string{"boot", "deploy", "management", "network", "power",
	"bios", "console", "firmware", "inspect", "raid", "rescue", "storage"}

func (hs nodeAPI) nodeStateRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.getNodeStates, nodeRule("baremetal:node:get_states")}}, "/v1/nodes/{ident}/states")
	s.handle(endpoint{"PUT": {hs.setProvisionState, nodeBody("baremetal:node:set_provision_state")}}, "/v1/nodes/{ident}/states/provision")
	s.handle(endpoint{"PUT": {hs.setPowerState, nodeRule("baremetal:node:set_power_state")}}, "/v1/nodes/{ident}/states/power")
	s.handle(endpoint{"PUT": {hs.setMaintenance, nodeRule("baremetal:node:set_maintenance")},
		"DELETE": {hs.clearMaintenance, nodeRule("baremetal:node:clear_maintenance")}}, "/v1/nodes/{ident}/maintenance")
	s.handle(endpoint{"GET": {hs.validateNode, nodeRule("baremetal:node:validate")}}, "/v1/nodes/{ident}/validate")
	s.handle(endpoint{"GET": {hs.validateNodeByQuery, bodyRule("baremetal:node:validate")}}, "/v1/nodes/validate")
	s.handle(endpoint{"GET": {hs.getBootDevice, nodeRule("baremetal:node:get_boot_device")},
		"PUT": {hs.setBootDevice, nodeRule("baremetal:node:set_boot_device")}}, "/v1/nodes/{ident}/management/boot_device")
	s.handle(endpoint{"GET": {hs.supportedBootDevices, nodeRule("baremetal:node:get_boot_device")}}, "/v1/nodes/{ident}/management/boot_device/supported")
}

// GET /v1/nodes/{ident}/states
func (hs nodeAPI) getNodeStates(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	n, _, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("console_enabled")
	w.boolean(n.ConsoleEnabled)
	w.key("last_error")
	if shown, hidden := rc.hidden(n, "last_error"); hidden {
		w.any(shown) // the node's rendering hides it from this principal too
	} else {
		w.strOrNull(n.LastError)
	}
	for _, kv := range [][2]string{{"power_state", n.PowerState},
		{"provision_state", shownProvisionState(n.ProvisionState, rc.minor)},
		{"target_power_state", n.TargetPowerState}, {"target_provision_state", n.TargetProvisionState}} {
		w.key(kv[0])
		w.strOrNull(kv[1])
	}
	w.key("provision_updated_at")
	w.timestamp(n.ProvisionUpdatedAt)
	if rc.minor >= minorRaidConfig {
		w.key("raid_config")
		w.object(n.RaidConfig)
		w.key("target_raid_config")
		w.object(n.TargetRaidConfig)
	}
	if rc.minor >= minorBootMode {
		w.key("boot_mode")
		w.strOrNull(n.BootMode)
		w.key("secure_boot")
		w.boolPtr(n.SecureBoot)
	}
	w.endObj()
	return rc.json(200, w)
}

// statesLocation is the Location of an accepted state change.
func (hs nodeAPI) statesLocation(rc *call, raw string) string {
	return rc.link(false, "nodes", pathEscape(raw), "states")
}

// PUT /v1/nodes/{ident}/states/provision
func (hs nodeAPI) setProvisionState(rc *call) error {
	s := hs.s
	args, err := rc.argsBody(s.cfg.MaxProvisionBodyBytes, "target", "configdrive", "clean_steps",
		"deploy_steps", "rescue_password", "disable_ramdisk", "service_steps", "runbook")
	if err != nil {
		return err
	}
	req, err := provisionArgs(args)
	if err != nil {
		return err
	}
	n, raw, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	if err := hs.gateProvision(rc, &req, args); err != nil {
		return err
	}
	if err := rc.authorizeProvision(n, req); err != nil {
		return err
	}
	req.Minor = rc.minor
	if err := s.cfg.Lifecycle.Provision(rc.ctx, n.UUID, req); err != nil {
		return err
	}
	return rc.accepted(hs.statesLocation(rc, raw))
}

// provisionArgs type-checks the provision body in Ironic's argument order.
func provisionArgs(args map[string]any) (conductor.ProvisionRequest, error) {
	var req conductor.ProvisionRequest
	target, present, err := argString("target", args["target"])
	if err != nil {
		return req, err
	}
	if !present {
		return req, missingArg("target")
	}
	req.Target = target
	if err := argTypes("configdrive", args["configdrive"], "null", "object", "string"); err != nil {
		return req, err
	}
	if truthy(args["configdrive"]) {
		req.ConfigDrive = args["configdrive"]
	}
	if req.CleanSteps, err = stepsArg("clean_steps", args["clean_steps"]); err != nil {
		return req, err
	}
	if req.DeploySteps, err = stepsArg("deploy_steps", args["deploy_steps"]); err != nil {
		return req, err
	}
	if pw, present, err := argString("rescue_password", args["rescue_password"]); err != nil {
		return req, err
	} else if present {
		req.RescuePassword = &pw
	}
	if req.DisableRamdisk, err = argBool("disable_ramdisk", args["disable_ramdisk"]); err != nil {
		return req, err
	}
	if req.ServiceSteps, err = stepsArg("service_steps", args["service_steps"]); err != nil {
		return req, err
	}
	return req, argTypes("runbook", args["runbook"], "null", "string")
}

// stepsArg checks a list of steps (null or a list of objects).
func stepsArg(name string, v any) ([]model.JSON, error) {
	if err := argTypes(name, v, "null", "array"); err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	if len(list) == 0 {
		return nil, nil
	}
	steps := make([]model.JSON, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, invalid("Invalid %s: %s is not of type 'object'", name, maskedRepr(e))
		}
		steps[i] = m
	}
	return steps, checkStepSchema(name, steps)
}

// gateProvision refuses verbs and arguments newer than the request's
// version; the conductor checks everything that depends on the node.
func (hs nodeAPI) gateProvision(rc *call, req *conductor.ProvisionRequest, args map[string]any) error {
	if v, ok := fsm.LookupVerb(req.Target); ok && !v.AllowedAt(rc.minor) {
		return notAcceptable()
	}
	if truthy(args["runbook"]) {
		// Ironic ignores an empty runbook; a named one needs 1.92. The
		// conductor reads it under the node's lock (withRunbook), and its
		// disable_ramdisk replaces the request's.
		if rc.minor < minorRunbooks {
			return notAcceptable()
		}
		ident := args["runbook"].(string)
		switch {
		case isUUIDLike(ident):
			ident = canonicalUUID(ident)
		case !isValidLogicalName(ident):
			return invalid("Expected a logical name or UUID but received %s.", ident) // InvalidUuidOrName
		}
		req.Runbook = ident
	}
	if err := hs.checkConfigDrive(rc, req.Target, req.ConfigDrive); err != nil {
		return err
	}
	if len(req.DeploySteps) > 0 && rc.minor < minorDeploySteps {
		return minVersionRequired(minorDeploySteps)
	}
	if req.Runbook == "" {
		if err := conductor.CheckDisableRamdisk(req.Target, req.DisableRamdisk, rc.minor); err != nil {
			return err
		}
	}
	if len(req.ServiceSteps) > 0 && rc.minor < minorService {
		return notAcceptable()
	}
	return nil
}

// b64Alphabet is what Ironic accepts in a config drive string that is not
// a URL (base64 plus blanks).
const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n\r\t "

// checkConfigDrive is Ironic's check_allow_configdrive minus the target
// check, which the conductor does.
func (hs nodeAPI) checkConfigDrive(rc *call, target string, cd any) error {
	if cd == nil {
		return nil
	}
	if target == "rebuild" && rc.minor < minorRebuildConfigDrv {
		return invalid("Adding a config drive is only supported when setting provision state to active")
	}
	switch x := cd.(type) {
	case map[string]any:
		if rc.minor < minorBuildConfigDrive {
			return invalid("Providing a JSON object for configdrive is only supported starting with API version 1.%d", minorBuildConfigDrive)
		}
		if _, ok := x["vendor_data"]; ok && rc.minor < minorConfigDriveVendor {
			return invalid("Providing vendor_data in configdrive is only supported starting with API version 1.%d", minorConfigDriveVendor)
		}
		return checkConfigDriveObject(x)
	case string:
		if strings.Contains(x, "://") {
			return nil
		}
		for _, c := range x {
			if !strings.ContainsRune(b64Alphabet, c) {
				return invalid("Invalid configdrive format: it is neither a JSON, nor a URL, nor a base64 string")
			}
		}
	}
	return nil
}

// checkConfigDriveObject checks the keys of a config drive to build.
func checkConfigDriveObject(m map[string]any) error {
	for k, v := range m {
		var ok bool
		switch k {
		case "meta_data", "network_data", "vendor_data":
			_, ok = v.(map[string]any)
		case "user_data":
			t := jsonType(v)
			ok = t == "object" || t == "array" || t == "string" || t == "null"
		default:
			return invalid("Invalid configdrive format: Additional properties are not allowed (%s was unexpected)", pyrepr.Quote(k))
		}
		if !ok {
			return invalid("Invalid configdrive format: %s is not valid for %s", maskedRepr(v), k)
		}
	}
	return nil
}

// PUT /v1/nodes/{ident}/states/power
func (hs nodeAPI) setPowerState(rc *call) error {
	s := hs.s
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "target", "timeout")
	if err != nil {
		return err
	}
	target, present, err := argString("target", args["target"])
	if err != nil {
		return err
	}
	if !present {
		return missingArg("target")
	}
	timeout, err := argInt("timeout", args["timeout"])
	if err != nil {
		return err
	}
	n, raw, err := hs.loadNode(rc)
	if err != nil {
		return err
	}
	soft := target == fsm.SoftRebooting || target == fsm.SoftPowerOff
	if (soft || (timeout != nil && *timeout != 0)) && rc.minor < minorSoftPower {
		return notAcceptable()
	}
	req := conductor.PowerRequest{Target: target, Minor: rc.minor}
	if timeout != nil {
		if *timeout < 1 {
			return invalid("timeout has to be positive integer")
		}
		req.Timeout = int(min(*timeout, math.MaxInt32))
	}
	if err := checkDisablePowerOff(n, target); err != nil {
		return err
	}
	if err := s.cfg.Lifecycle.SetPower(rc.ctx, n.UUID, req); err != nil {
		return err
	}
	return rc.accepted(hs.statesLocation(rc, raw))
}

// checkDisablePowerOff is Ironic's API check of disable_power_off (1.95):
// a node that must stay powered refuses power off and soft power off
// (409 PowerStateFailure), at any version. (Ironic first refuses any power
// change of a node in cleaning or clean wait with a 400; Anvil's API does
// not make that check, so such a node gets this 409.)
func checkDisablePowerOff(n *model.Node, target string) error {
	if !n.DisablePowerOff || (target != fsm.PowerOff && target != fsm.SoftPowerOff) {
		return nil
	}
	return fault.New(fault.Conflict, "Failed to set node power state to %s.", target)
}

// PUT /v1/nodes/{ident}/maintenance
func (hs nodeAPI) setMaintenance(rc *call) error {
	s := hs.s
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "reason")
	if err != nil {
		return err
	}
	reason, _, err := argString("reason", args["reason"])
	if err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Lifecycle.SetMaintenance(rc.ctx, ident, true, reason); err != nil {
		return err
	}
	return rc.accepted("")
}

// DELETE /v1/nodes/{ident}/maintenance
func (hs nodeAPI) clearMaintenance(rc *call) error {
	s := hs.s
	if _, err := rc.argsBody(s.cfg.MaxBodyBytes); err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Lifecycle.SetMaintenance(rc.ctx, ident, false, ""); err != nil {
		return err
	}
	return rc.accepted("")
}

// GET /v1/nodes/{ident}/validate
func (hs nodeAPI) validateNode(rc *call) error {
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	return hs.writeValidation(rc, ident)
}

// GET /v1/nodes/validate?node=<ident> (or the deprecated node_uuid=)
func (hs nodeAPI) validateNodeByQuery(rc *call) error {
	if err := rc.checkQuery("node", "node_uuid"); err != nil {
		return err
	}
	ident, err := rc.uuidParam("node_uuid")
	if err != nil {
		return err
	}
	if ident == "" {
		raw, _ := rc.param("node")
		if !isUUIDLike(raw) && !isValidLogicalName(raw) {
			return invalid("Expected a logical name or UUID but received %s.", pyrepr.Str(nilIfEmpty(raw)))
		}
		if !isUUIDLike(raw) && rc.minor < minorNodeName {
			return notAcceptable()
		}
		if ident, err = hs.nodeIdent(rc, raw); err != nil {
			return err
		}
	}
	if err := rc.authorizeIdent(ident, "baremetal:node:validate"); err != nil {
		return err
	}
	return hs.writeValidation(rc, ident)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (hs nodeAPI) writeValidation(rc *call, ident string) error {
	res, err := rc.s.cfg.Lifecycle.Validate(rc.ctx, ident)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(validateOrder, a), slices.Index(validateOrder, b)
		if ia < 0 {
			ia = len(validateOrder)
		}
		if ib < 0 {
			ib = len(validateOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	w := &jw{}
	w.rootObj()
	for _, k := range keys {
		w.key(k)
		w.obj()
		w.key("result")
		w.boolPtr(res[k].Result)
		if res[k].Reason != "" {
			w.key("reason")
			w.str(res[k].Reason)
		}
		w.endObj()
	}
	w.endObj()
	return rc.json(200, w)
}

// GET /v1/nodes/{ident}/management/boot_device
func (hs nodeAPI) getBootDevice(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	dev, err := s.cfg.Management.GetBootDevice(rc.ctx, ident)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("boot_device")
	w.strOrNull(dev.Device)
	w.key("persistent")
	w.boolPtr(dev.Persistent)
	w.endObj()
	return rc.json(200, w)
}

// PUT /v1/nodes/{ident}/management/boot_device
func (hs nodeAPI) setBootDevice(rc *call) error {
	s := hs.s
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "boot_device", "persistent")
	if err != nil {
		return err
	}
	dev, present, err := argString("boot_device", args["boot_device"])
	if err != nil {
		return err
	}
	if !present {
		return missingArg("boot_device")
	}
	persistent, err := argBool("persistent", args["persistent"])
	if err != nil {
		return err
	}
	if persistent == nil {
		persistent = new(bool)
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	if err := s.cfg.Management.SetBootDevice(rc.ctx, ident, conductor.BootDevice{Device: dev, Persistent: persistent}); err != nil {
		return err
	}
	return rc.noContent()
}

// GET /v1/nodes/{ident}/management/boot_device/supported
func (hs nodeAPI) supportedBootDevices(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	ident, err := hs.nodeIdent(rc, rc.r.PathValue("ident"))
	if err != nil {
		return err
	}
	devs, err := s.cfg.Management.SupportedBootDevices(rc.ctx, ident)
	if err != nil {
		return err
	}
	w := &jw{}
	w.rootObj()
	w.key("supported_boot_devices")
	w.strings(devs)
	w.endObj()
	return rc.json(200, w)
}
