-- The shared event log of processes on PostgreSQL (internal/eventlog). A
-- SQLite database serves one process, whose events go straight to its
-- in-process broker; the table is here so that both engines have the same
-- schema versions.
CREATE TABLE node_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    node_uuid  TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE node_events_pruned (
    upto INTEGER NOT NULL
);
INSERT INTO node_events_pruned (upto) VALUES (0);
