package api

import (
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/fault"
)

// minorInventory is the version that added /v1/nodes/{node}/inventory.
const minorInventory = 81

// Where the inspect interfaces (agent and redfish) store the inventory and
// the plugin data in driver_internal_info.
const (
	inventoryKey  = driver.KeyInventory
	pluginDataKey = driver.KeyPluginData
)

func (hs nodeAPI) inventoryRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.getInventory, nodeRule("baremetal:node:inventory:get")}}, "/v1/nodes/{ident}/inventory")
}

// GET /v1/nodes/{ident}/inventory: the inventory of the node's last
// inspection (agent or redfish), {"inventory": {...}, "plugin_data": {...}} (what Metal3 reads).
func (hs nodeAPI) getInventory(rc *call) error {
	n, _, err := rc.nodeSub(minorInventory)
	if err != nil {
		return err
	}
	inv, _ := n.DriverInternalInfo[inventoryKey].(map[string]any)
	if inv == nil {
		return fault.Missing("Node inventory for node", n.UUID)
	}
	w := &jw{}
	w.rootObj()
	w.key("inventory")
	w.object(inv)
	pd, _ := n.DriverInternalInfo[pluginDataKey].(map[string]any)
	w.key("plugin_data")
	w.masked(pd)
	w.endObj()
	return rc.json(200, w)
}
