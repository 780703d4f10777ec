ALTER TABLE node_history DROP COLUMN duration_seconds;
ALTER TABLE node_history DROP COLUMN target_provision_state;
ALTER TABLE node_history DROP COLUMN state;
ALTER TABLE node_history DROP COLUMN project;
UPDATE runbooks SET data = json_remove(data, '$.traits', '$.description');
