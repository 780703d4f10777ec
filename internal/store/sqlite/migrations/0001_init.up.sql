-- Nodes: id is Ironic's default sort key; data is the JSON of model.Node; the
-- other columns copy the fields queries filter and sort on. Times are UTC text
-- in sqlstore.TimeLayout ("2006-01-02 15:04:05.000000"), so text order is time
-- order. Empty name, instance_uuid and reservation are NULL.
CREATE TABLE nodes (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid                   TEXT    NOT NULL UNIQUE,
    name                   TEXT    UNIQUE,
    instance_uuid          TEXT    UNIQUE,
    version                INTEGER NOT NULL,
    reservation            TEXT,
    driver                 TEXT    NOT NULL DEFAULT '',
    provision_state        TEXT    NOT NULL DEFAULT '',
    target_provision_state TEXT    NOT NULL DEFAULT '',
    power_state            TEXT    NOT NULL DEFAULT '',
    maintenance            INTEGER NOT NULL DEFAULT 0,
    resource_class         TEXT    NOT NULL DEFAULT '',
    fault                  TEXT    NOT NULL DEFAULT '',
    owner                  TEXT    NOT NULL DEFAULT '',
    lessee                 TEXT    NOT NULL DEFAULT '',
    conductor_group        TEXT    NOT NULL DEFAULT '',
    provision_updated_at   TEXT,
    created_at             TEXT    NOT NULL,
    updated_at             TEXT,
    data                   TEXT    NOT NULL
);
CREATE INDEX nodes_provision_state_idx ON nodes (provision_state);
CREATE INDEX nodes_reservation_idx ON nodes (reservation);
CREATE INDEX nodes_conductor_group_idx ON nodes (conductor_group);
CREATE INDEX nodes_owner_idx ON nodes (owner);
CREATE INDEX nodes_lessee_idx ON nodes (lessee);

CREATE TABLE ports (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid           TEXT    NOT NULL UNIQUE,
    address        TEXT    NOT NULL UNIQUE,
    name           TEXT    UNIQUE,
    node_uuid      TEXT    NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    portgroup_uuid TEXT    NOT NULL DEFAULT '',
    pxe_enabled    INTEGER NOT NULL DEFAULT 0,
    version        INTEGER NOT NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT,
    data           TEXT    NOT NULL
);
CREATE INDEX ports_node_uuid_idx ON ports (node_uuid);

CREATE TABLE conductors (
    hostname        TEXT    PRIMARY KEY,
    conductor_group TEXT    NOT NULL DEFAULT '',
    drivers         TEXT    NOT NULL DEFAULT '[]',
    online          INTEGER NOT NULL DEFAULT 1,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);

CREATE TABLE node_history (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid          TEXT    NOT NULL UNIQUE,
    node_uuid     TEXT    NOT NULL REFERENCES nodes (uuid) ON DELETE CASCADE,
    created_at    TEXT    NOT NULL,
    severity      TEXT    NOT NULL DEFAULT '',
    event_type    TEXT    NOT NULL DEFAULT '',
    event         TEXT    NOT NULL DEFAULT '',
    conductor     TEXT    NOT NULL DEFAULT '',
    user_name     TEXT    NOT NULL DEFAULT '',
    from_state    TEXT    NOT NULL DEFAULT '',
    to_state      TEXT    NOT NULL DEFAULT '',
    trigger_event TEXT    NOT NULL DEFAULT '',
    duration_ns   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX node_history_node_idx ON node_history (node_uuid, created_at, id);
