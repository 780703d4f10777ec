-- The node gauges of /metrics and the fleet counts are one GROUP BY
-- (CountNodeGroups) over provision state, power state, maintenance,
-- reservation and fault, with each group's oldest provision_updated_at:
-- this index holds every column it reads, so the count never reads a row
-- (a scan of the table at 100,000 nodes took seconds).
DROP INDEX nodes_groups_idx;
CREATE INDEX nodes_groups_idx ON nodes (provision_state, power_state, maintenance, reservation, fault, provision_updated_at);
