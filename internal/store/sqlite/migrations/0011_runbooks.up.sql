-- Runbooks (API 1.92): a named (trait-named) list of steps a node runs as
-- its manual clean or service steps. Stored like deploy templates: the
-- JSON of the model in data; uuid, name and what lists filter and sort on
-- (owner, '' for none; public; disable_ramdisk) beside it.
CREATE TABLE runbooks (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid            TEXT    NOT NULL UNIQUE,
    name            TEXT    NOT NULL UNIQUE,
    owner           TEXT    NOT NULL DEFAULT '',
    public          INTEGER NOT NULL DEFAULT 0,
    disable_ramdisk INTEGER NOT NULL DEFAULT 0,
    version         INTEGER NOT NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT,
    data            TEXT    NOT NULL
);
CREATE INDEX runbooks_owner_idx ON runbooks (owner);
