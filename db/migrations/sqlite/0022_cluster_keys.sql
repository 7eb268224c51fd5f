-- The keys of a cluster's nodes (PostgreSQL's; here so both stores have
-- one schema).
CREATE TABLE cluster_keys (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    node_id TEXT NOT NULL,
    set_at TEXT NOT NULL DEFAULT ''
);
