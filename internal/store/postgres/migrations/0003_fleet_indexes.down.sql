DROP INDEX nodes_provision_updated_idx;
DROP INDEX nodes_maintenance_idx;
DROP INDEX nodes_power_state_idx;
DROP INDEX nodes_groups_idx;
