package server

import (
	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/eventbus"
	"github.com/anvil-metal/anvil/internal/handoff"
	"github.com/anvil-metal/anvil/internal/records"
)

// What api.Wire takes at run time, checked at compile time: the store is
// the API's three readers; the conductor's core its Lifecycle's Verbs,
// its Nodes and Allocations services the rest of its Lifecycle; an
// API-only process's handoff to the owners a whole Lifecycle and the
// Agents, each method written there (a verb added to the API's Lifecycle
// or Agents fails to compile here until handoff routes it); the
// conductor's other services its Agents, Management, NodeRecords and
// Hardware, and the console controller's Resolver; the records service
// its Records.
var (
	_ api.NodeReader       = eventbus.Publisher(nil)
	_ api.NodeDetailReader = eventbus.Publisher(nil)
	_ api.RecordReader     = eventbus.Publisher(nil)

	_ api.Verbs       = (*conductor.Conductor)(nil)
	_ api.Nodes       = (*conductor.Nodes)(nil)
	_ api.Allocations = (*conductor.Allocations)(nil)
	_ api.Lifecycle   = (*handoff.Conductor)(nil)
	_ api.Agents      = (*handoff.Conductor)(nil)

	_ api.Agents       = (*conductor.Agents)(nil)
	_ api.Management   = (*conductor.Management)(nil)
	_ api.NodeRecords  = (*conductor.NodeRecords)(nil)
	_ api.Hardware     = (*conductor.Hardware)(nil)
	_ console.Resolver = (*conductor.Consoles)(nil)
	_ api.Records      = (*records.Service)(nil)
)
