package api

import "github.com/anvil-metal/anvil/internal/model"

// raidRoutes serve Ironic's RAID API (1.12).
func (hs managementAPI) raidRoutes() {
	s := hs.s
	s.handle(endpoint{"PUT": {hs.setRAIDConfig, nodeRule("baremetal:node:set_raid_state")}}, "/v1/nodes/{ident}/states/raid")
	s.handle(endpoint{"GET": {hs.raidLogicalDiskProperties, rule("baremetal:driver:get_raid_logical_disk_properties")}}, "/v1/drivers/{name}/raid/logical_disk_properties")
}

// PUT /v1/nodes/{ident}/states/raid: the body is the target RAID
// configuration ({} clears it); 204.
func (hs managementAPI) setRAIDConfig(rc *call) error {
	s := hs.s
	body, err := rc.decodeBody(s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if body == nil {
		return missingArg("target_raid_config")
	}
	if err := argTypes("target_raid_config", body, "object"); err != nil {
		return err
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	if rc.minor < minorRaidConfig {
		return notAcceptable()
	}
	if err := s.cfg.Lifecycle.SetTargetRAIDConfig(rc.ctx, n.UUID, model.JSON(body.(map[string]any))); err != nil {
		return err
	}
	return rc.noContent()
}

// GET /v1/drivers/{name}/raid/logical_disk_properties
func (hs managementAPI) raidLogicalDiskProperties(rc *call) error {
	s := hs.s
	if err := rc.checkQuery(); err != nil {
		return err
	}
	if rc.minor < minorRaidConfig {
		return notAcceptable()
	}
	props, err := s.cfg.Hardware.RAIDLogicalDiskProperties(rc.r.PathValue("name"))
	if err != nil {
		return err
	}
	return rc.json(200, stringMapJSON(props))
}
