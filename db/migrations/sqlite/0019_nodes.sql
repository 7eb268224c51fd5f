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
