-- The generic record table (store.RecordStore): every record kind that
-- needs of the database only a unique name and an owner, told apart by
-- kind. The kind's JSON in data; the head's columns beside it (name NULL
-- when the record has none, so unnamed records never collide; owner '' for
-- none, as runbooks). A unique constraint's first column names it to the
-- store, so the name index is (name, kind): a duplicate is "name".
CREATE TABLE records (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT    NOT NULL,
    uuid       TEXT    NOT NULL UNIQUE,
    name       TEXT,
    owner      TEXT    NOT NULL DEFAULT '',
    version    INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT,
    data       TEXT    NOT NULL
);
CREATE UNIQUE INDEX records_name_idx ON records (name, kind);
CREATE INDEX records_kind_idx ON records (kind, id);
