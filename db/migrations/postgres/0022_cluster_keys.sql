-- The keys every node of a cluster must share (the token key, the
-- secrets key), by fingerprint only: the first node to join records
-- each, and a node whose key differs is refused at join, by name.
CREATE TABLE cluster_keys (
    name text PRIMARY KEY,
    fingerprint text NOT NULL,
    node_id text NOT NULL,
    set_at timestamptz NOT NULL DEFAULT now()
);
