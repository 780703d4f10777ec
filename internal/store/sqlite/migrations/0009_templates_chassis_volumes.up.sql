-- Deploy templates (API 1.55): a named (trait-named) list of deploy steps
-- a deploy adds when the instance asks for the trait. Stored like
-- allocations: the JSON of the model in data, name and uuid beside it.
CREATE TABLE deploy_templates (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid       TEXT    NOT NULL UNIQUE,
    name       TEXT    NOT NULL UNIQUE,
    version    INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT,
    data       TEXT    NOT NULL
);

-- Chassis (Ironic's chassis): the JSON of the model in data. A node names
-- its chassis in nodes.chassis_uuid (a copy of data's), which a chassis
-- with nodes cannot be deleted under (the store checks it).
CREATE TABLE chassis (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid       TEXT    NOT NULL UNIQUE,
    version    INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT,
    data       TEXT    NOT NULL
);
ALTER TABLE nodes ADD COLUMN chassis_uuid TEXT;
CREATE INDEX nodes_chassis_uuid_idx ON nodes (chassis_uuid);
