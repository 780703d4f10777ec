-- Ironic API 1.112-1.115 (Ironic master's migrations e2d316b60d9e,
-- 16990309ad9d, 408fbf2c4's node_history columns): the project, the node's
-- provision state and target when a history event was recorded, and its
-- duration in seconds (NULL: unknown); and each runbook stored before
-- runbook traits gets its name as its trait, as Ironic's online migration
-- migrate_runbook_names_to_traits does. (Port, portgroup, runbook
-- description and firmware identity fields live in the JSON data.)
ALTER TABLE node_history ADD COLUMN project TEXT NOT NULL DEFAULT '';
ALTER TABLE node_history ADD COLUMN state TEXT NOT NULL DEFAULT '';
ALTER TABLE node_history ADD COLUMN target_provision_state TEXT NOT NULL DEFAULT '';
ALTER TABLE node_history ADD COLUMN duration_seconds INTEGER;
UPDATE runbooks SET data = json_set(data, '$.traits', json_array(name))
    WHERE json_type(data, '$.traits') IS NULL OR json_type(data, '$.traits') = 'null';
