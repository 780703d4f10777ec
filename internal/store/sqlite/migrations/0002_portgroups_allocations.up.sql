-- Portgroups (API 1.23) and allocations (API 1.52), stored like ports: the
-- JSON of the model in data, the columns queries filter and sort on beside
-- it. Empty name, address and node_uuid are NULL.
CREATE TABLE portgroups (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid       TEXT    NOT NULL UNIQUE,
    name       TEXT    UNIQUE,
    address    TEXT    UNIQUE,
    node_uuid  TEXT    NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT,
    data       TEXT    NOT NULL
);
CREATE INDEX portgroups_node_uuid_idx ON portgroups (node_uuid);

-- An allocation goes with its node (Ironic destroys it with the node).
CREATE TABLE allocations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid           TEXT    NOT NULL UNIQUE,
    name           TEXT    UNIQUE,
    node_uuid      TEXT    UNIQUE REFERENCES nodes (uuid) ON DELETE CASCADE,
    state          TEXT    NOT NULL DEFAULT '',
    resource_class TEXT    NOT NULL DEFAULT '',
    owner          TEXT    NOT NULL DEFAULT '',
    version        INTEGER NOT NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT,
    data           TEXT    NOT NULL
);
CREATE INDEX allocations_state_idx ON allocations (state);
