-- The dashboard's login sessions (internal/auth), shared by every API
-- process of the database and kept across restarts: key is the SHA-256 (hex)
-- of the session cookie's id, data the JSON auth records (who, until when;
-- never a password or token), expires_at when it ends (pruned on writes).
CREATE TABLE dashboard_sessions (
    key_hash   TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    data       TEXT NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);
