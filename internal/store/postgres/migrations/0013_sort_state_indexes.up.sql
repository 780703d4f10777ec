-- The node list sorted by provision_state, power_state, maintenance, owner,
-- lessee or conductor_group read every row and sorted them (190 ms for a
-- page of 100 at 100,000 nodes): their indexes held the key alone, and
-- PostgreSQL's do not end with the id that breaks ties, as SQLite's (rowid)
-- do. (key, id) serves the sort, the keyset page and the equality filters.
DROP INDEX nodes_provision_state_idx;
CREATE INDEX nodes_provision_state_idx ON nodes (provision_state, id);
DROP INDEX nodes_power_state_idx;
CREATE INDEX nodes_power_state_idx ON nodes (power_state, id);
DROP INDEX nodes_maintenance_idx;
CREATE INDEX nodes_maintenance_idx ON nodes (maintenance, id);
DROP INDEX nodes_owner_idx;
CREATE INDEX nodes_owner_idx ON nodes (owner, id);
DROP INDEX nodes_lessee_idx;
CREATE INDEX nodes_lessee_idx ON nodes (lessee, id);
DROP INDEX nodes_conductor_group_idx;
CREATE INDEX nodes_conductor_group_idx ON nodes (conductor_group, id);
