package api

// The handlers of each group of routes are methods of a type of their own
// over the Server (so that no method set holds the whole API); a group's
// routes function registers them.

// portAPI holds the ports routes and their rendering and filters.
type portAPI struct{ s *Server }

// portgroupAPI holds the portgroups routes.
type portgroupAPI struct{ s *Server }

// volumeAPI holds the volume connectors and targets routes.
type volumeAPI struct{ s *Server }

// recordAPI holds the routes of the records with no node: chassis, deploy
// templates, runbooks, inspection rules, conductors.
type recordAPI struct{ s *Server }

// allocationAPI holds the allocations routes.
type allocationAPI struct{ s *Server }

// driverAPI holds the drivers routes.
type driverAPI struct{ s *Server }

// nodeAPI holds the nodes routes: CRUD, states, lists, traits, history,
// inventory, diagnosis.
type nodeAPI struct{ s *Server }

// fleetAPI holds Anvil's fleet views and the shards route.
type fleetAPI struct{ s *Server }

// managementAPI holds the node management routes: VIFs, virtual media,
// vendor passthru, indicators, BIOS and firmware, boot mode, RAID,
// console.
type managementAPI struct{ s *Server }

// agentAPI holds the agent's routes: heartbeat, lookup,
// continue_inspection.
type agentAPI struct{ s *Server }
