-- Each node's latest failure diagnosis (Anvil's GET /v1/nodes/{ident}/diagnosis):
-- the JSON document in data (bounded by the conductor, never a secret),
-- created_at when it was made; it goes with the node.
CREATE TABLE node_diagnoses (
    node_uuid  TEXT NOT NULL PRIMARY KEY REFERENCES nodes (uuid) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    data       TEXT NOT NULL
);
