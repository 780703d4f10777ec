package api

import "github.com/anvil-metal/anvil/internal/fault"

// minorChangeBootMode is the version that added PUT .../states/boot_mode
// and .../states/secure_boot.
const minorChangeBootMode = 76

func (hs managementAPI) bootModeRoutes() {
	s := hs.s
	s.handle(endpoint{"PUT": {hs.setBootMode, nodeRule("baremetal:node:set_boot_mode")}}, "/v1/nodes/{ident}/states/boot_mode")
	s.handle(endpoint{"PUT": {hs.setSecureBoot, nodeRule("baremetal:node:set_secure_boot")}}, "/v1/nodes/{ident}/states/secure_boot")
}

func errBootModeVersion() error {
	return fault.New(fault.NotFound, "This endpoint is supported starting with the API version 1.76")
}

// PUT /v1/nodes/{ident}/states/boot_mode {"target": "uefi"|"bios"}: 202;
// the change runs in a worker (boot_mode or last_error tell the outcome).
func (hs managementAPI) setBootMode(rc *call) error {
	s := hs.s
	if rc.minor < minorChangeBootMode {
		return errBootModeVersion()
	}
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "target")
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
	raw := rc.r.PathValue("ident")
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, raw)
	if err != nil {
		return err
	}
	if err := s.cfg.Management.ChangeBootMode(rc.ctx, ident, "", target); err != nil {
		return err
	}
	return rc.accepted(rc.link(false, "nodes", pathEscape(raw), "states"))
}

// PUT /v1/nodes/{ident}/states/secure_boot {"target": true|false}: 202.
func (hs managementAPI) setSecureBoot(rc *call) error {
	s := hs.s
	if rc.minor < minorChangeBootMode {
		return errBootModeVersion()
	}
	args, err := rc.argsBody(s.cfg.MaxBodyBytes, "target")
	if err != nil {
		return err
	}
	target, err := argBool("target", args["target"])
	if err != nil {
		return err
	}
	if target == nil {
		return invalid("Invalid secure_boot None requested for node. Allowed secure_boot states are: True, False) ")
	}
	raw := rc.r.PathValue("ident")
	ident, err := (nodeAPI{rc.s}).nodeIdent(rc, raw)
	if err != nil {
		return err
	}
	if err := s.cfg.Management.ChangeSecureBoot(rc.ctx, ident, "", *target); err != nil {
		return err
	}
	return rc.accepted(rc.link(false, "nodes", pathEscape(raw), "states"))
}
