-- The hand-off table of API processes (internal/workq). Only PostgreSQL
-- uses it (SQLite serves one process, --role all); it is here so that both
-- engines have the same schema versions.
CREATE TABLE conductor_calls (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    node_uuid  TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    done       INTEGER NOT NULL DEFAULT 0,
    fault_kind INTEGER NOT NULL DEFAULT 0,
    message    TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL DEFAULT ''
);
