-- Indexes for the fleet views (GET /v1/fleet/nodes and /v1/fleet/summary):
-- the per-state counts read this index alone (CountNodeGroups), filters
-- on power state and maintenance, and the stuck-node scan (nodes in a
-- state, oldest provision_updated_at first).
CREATE INDEX nodes_groups_idx ON nodes (provision_state, power_state, maintenance, reservation);
CREATE INDEX nodes_power_state_idx ON nodes (power_state);
CREATE INDEX nodes_maintenance_idx ON nodes (maintenance);
CREATE INDEX nodes_provision_updated_idx ON nodes (provision_state, provision_updated_at);
