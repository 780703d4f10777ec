-- Inspection rules (API 1.96): conditions on the data an inspection
-- gathered and actions on the node when they hold. Stored like deploy
-- templates: the JSON of the model in data; priority and phase beside it,
-- for the inspection to read a phase's rules in their order.
CREATE TABLE inspection_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid       TEXT    NOT NULL UNIQUE,
    version    INTEGER NOT NULL,
    priority   INTEGER NOT NULL DEFAULT 0,
    phase      TEXT    NOT NULL DEFAULT 'main',
    description TEXT,
    sensitive  INTEGER NOT NULL DEFAULT 0,
    created_at TEXT    NOT NULL,
    updated_at TEXT,
    data       TEXT    NOT NULL
);
CREATE INDEX inspection_rules_phase_idx ON inspection_rules (phase);
