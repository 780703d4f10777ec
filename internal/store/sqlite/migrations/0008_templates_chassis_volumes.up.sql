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
