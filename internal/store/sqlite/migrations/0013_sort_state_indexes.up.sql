-- Nothing on SQLite: its single-column indexes on provision_state,
-- power_state, maintenance, owner, lessee and conductor_group end with the
-- rowid, which is id, so they serve the (key, id) sort already. PostgreSQL's
-- migration 0013 makes its indexes so.
SELECT 1;
