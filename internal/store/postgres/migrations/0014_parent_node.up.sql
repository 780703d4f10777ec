-- The node's parent (a copy of data's parent_node; NULL when none), so that
-- node lists filter on it in SQL: Ironic's lists leave child nodes out by
-- default, and a list that can filter every condition in SQL may read just
-- the columns it shows instead of decoding each node.
ALTER TABLE nodes ADD COLUMN parent_node TEXT COLLATE "C";
UPDATE nodes SET parent_node = NULLIF(data->>'parent_node', '');
