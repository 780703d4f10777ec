DROP INDEX nodes_chassis_uuid_idx;
ALTER TABLE nodes DROP COLUMN chassis_uuid;
DROP TABLE chassis;
DROP TABLE deploy_templates;
