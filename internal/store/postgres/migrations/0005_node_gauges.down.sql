DROP INDEX nodes_groups_idx;
CREATE INDEX nodes_groups_idx ON nodes (provision_state, power_state, maintenance, reservation);
