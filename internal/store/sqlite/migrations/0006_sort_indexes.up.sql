-- Keyset pages of the node list sorted by any of Ironic's sort keys read
-- an index in (key, id) order instead of sorting the table: the expression
-- is the one the store sorts by (sqlstore.sortExpr: NULL as the dialect's
-- zero). Keys with an index already: id, uuid, provision_state,
-- power_state, maintenance, owner, lessee, conductor_group.
CREATE INDEX nodes_sort_name_idx ON nodes (COALESCE(name, ''), id);
CREATE INDEX nodes_sort_created_idx ON nodes (created_at, id);
CREATE INDEX nodes_sort_updated_idx ON nodes (COALESCE(updated_at, ''), id);
CREATE INDEX nodes_sort_provision_updated_idx ON nodes (COALESCE(provision_updated_at, ''), id);
CREATE INDEX nodes_sort_driver_idx ON nodes (driver, id);
CREATE INDEX nodes_sort_instance_uuid_idx ON nodes (COALESCE(instance_uuid, ''), id);
CREATE INDEX nodes_sort_resource_class_idx ON nodes (resource_class, id);
CREATE INDEX nodes_sort_fault_idx ON nodes (fault, id);
CREATE INDEX nodes_sort_reservation_idx ON nodes (COALESCE(reservation, ''), id);
CREATE INDEX nodes_sort_target_provision_state_idx ON nodes (target_provision_state, id);
