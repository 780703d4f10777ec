DROP TABLE volume_targets;
DROP TABLE volume_connectors;
