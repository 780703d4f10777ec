DROP TABLE node_events;
