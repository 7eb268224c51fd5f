-- The nodes of a cluster: a cluster needs PostgreSQL, and the embedded
-- store refuses --node-id; the table is here so both stores have one
-- schema.
CREATE TABLE nodes (
    id               TEXT PRIMARY KEY,
    advertise_url    TEXT NOT NULL,
    version          TEXT NOT NULL,
    incarnation      TEXT NOT NULL,
    started_at       INTEGER NOT NULL,
    heartbeat_at     INTEGER NOT NULL,
    stopped_at       INTEGER,
    sessions         INTEGER NOT NULL DEFAULT 0,
    running_commands INTEGER NOT NULL DEFAULT 0
);

-- A session's owner (PostgreSQL's takes and renews it; here the check in
-- a transaction finds the same table).
CREATE TABLE session_owners (
    session_id       TEXT PRIMARY KEY,
    node_id          TEXT NOT NULL,
    epoch            INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL
);
CREATE INDEX session_owners_node ON session_owners (node_id);
