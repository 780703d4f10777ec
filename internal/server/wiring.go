package server

import (
	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/conductor"
	eventbus "github.com/anvil-metal/anvil/internal/events"
	"github.com/anvil-metal/anvil/internal/handoff"
	"github.com/anvil-metal/anvil/internal/records"
)

// What api.Wire takes at run time, checked at compile time: the store is
// the API's three readers; the conductor's core (or an API-only process's
// handoff to the owners) its Lifecycle and Agents; the conductor's
// services its Management, NodeRecords and Hardware; the records service
// its Records.
var (
	_ api.NodeReader       = eventbus.Publisher(nil)
	_ api.NodeDetailReader = eventbus.Publisher(nil)
	_ api.RecordReader     = eventbus.Publisher(nil)

	_ api.Lifecycle = (*conductor.Conductor)(nil)
	_ api.Agents    = (*conductor.Conductor)(nil)
	_ api.Lifecycle = (*handoff.Conductor)(nil)
	_ api.Agents    = (*handoff.Conductor)(nil)

	_ api.Management  = (*conductor.Management)(nil)
	_ api.NodeRecords = (*conductor.NodeRecords)(nil)
	_ api.Hardware    = (*conductor.Hardware)(nil)
	_ api.Records     = (*records.Service)(nil)
)
