ALTER TABLE nodes DROP COLUMN parent_node;
