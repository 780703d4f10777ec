-- The node events every process publishes (internal/eventlog), so that the
-- watch stream of any API process carries the changes made by all of them.
-- Writers insert under one transaction-level advisory lock, so ids are
-- allocated in commit order: a reader that has seen id N has seen every
-- event below it. Ids start at the migration time in microseconds, so an id
-- a client kept from an earlier database is older than any kept event (the
-- stream answers "reset"). Old rows are pruned by count; node_events_pruned
-- holds the highest id pruned (0: none), so that a process starting on a
-- table read whole knows whether a resume from before its oldest row is
-- complete.
CREATE TABLE node_events (
    id         BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    node_uuid  TEXT        COLLATE "C" NOT NULL,
    data       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
SELECT setval(pg_get_serial_sequence('node_events', 'id'),
              (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT);
CREATE TABLE node_events_pruned (
    upto BIGINT NOT NULL
);
INSERT INTO node_events_pruned (upto) VALUES (0);
