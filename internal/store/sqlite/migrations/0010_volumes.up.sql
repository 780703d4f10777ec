-- Volume connectors and targets (API 1.32, boot from volume), stored like
-- portgroups: the JSON of the model in data, the columns queries filter,
-- sort and keep unique beside it. Both go with their node (Ironic destroys
-- them with it). A unique constraint's first column names it to the store
-- (type: Ironic's type and connector_id; boot_index: its node and boot
-- index).
CREATE TABLE volume_connectors (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid         TEXT    NOT NULL UNIQUE,
    node_uuid    TEXT    NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    type         TEXT    NOT NULL,
    connector_id TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    created_at   TEXT    NOT NULL,
    updated_at   TEXT,
    data         TEXT    NOT NULL,
    UNIQUE (type, connector_id)
);
CREATE INDEX volume_connectors_node_uuid_idx ON volume_connectors (node_uuid);

CREATE TABLE volume_targets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid        TEXT    NOT NULL UNIQUE,
    node_uuid   TEXT    NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    volume_type TEXT    NOT NULL,
    volume_id   TEXT    NOT NULL,
    boot_index  INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    created_at  TEXT    NOT NULL,
    updated_at  TEXT,
    data        TEXT    NOT NULL,
    UNIQUE (boot_index, node_uuid)
);
CREATE INDEX volume_targets_node_uuid_idx ON volume_targets (node_uuid);
