DROP TABLE node_events_pruned;
DROP TABLE node_events;
