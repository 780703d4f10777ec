package server

import (
	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/conductor"
	eventbus "github.com/anvil-metal/anvil/internal/events"
	"github.com/anvil-metal/anvil/internal/handoff"
	"github.com/anvil-metal/anvil/internal/records"
)

// What api.Wire takes at run time, checked at compile time: the store is
// the API's three readers, the conductor (or an API-only process's handoff
// to the owners) five of its services, the records service the sixth.
var (
	_ api.NodeReader       = eventbus.Publisher(nil)
	_ api.NodeDetailReader = eventbus.Publisher(nil)
	_ api.RecordReader     = eventbus.Publisher(nil)

	_ api.Lifecycle   = (*conductor.Conductor)(nil)
	_ api.Management  = (*conductor.Conductor)(nil)
	_ api.NodeRecords = (*conductor.Conductor)(nil)
	_ api.Agents      = (*conductor.Conductor)(nil)
	_ api.Hardware    = (*conductor.Conductor)(nil)

	_ api.Lifecycle   = (*handoff.Conductor)(nil)
	_ api.Management  = (*handoff.Conductor)(nil)
	_ api.NodeRecords = (*handoff.Conductor)(nil)
	_ api.Records     = (*records.Service)(nil)
	_ api.Agents      = (*handoff.Conductor)(nil)
	_ api.Hardware    = (*handoff.Conductor)(nil)
)
