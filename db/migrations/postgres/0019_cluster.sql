-- The nodes of a cluster (several sessiond over one database): each
-- node's row, renewed by its heartbeat. Liveness is judged on the
-- database's clock: a node whose heartbeat_at is older than the lease is
-- dead to the others, and its id may be taken by a new process.
-- incarnation is the process holding the id, so that a heartbeat renews
-- only its own row; sessions and running_commands are what it held at
-- its last heartbeat.
CREATE TABLE nodes (
    id               text COLLATE "C" PRIMARY KEY,
    advertise_url    text NOT NULL,
    version          text NOT NULL,
    incarnation      uuid NOT NULL,
    started_at       timestamptz NOT NULL,
    heartbeat_at     timestamptz NOT NULL,
    stopped_at       timestamptz,
    sessions         integer NOT NULL DEFAULT 0,
    running_commands integer NOT NULL DEFAULT 0
);

-- A session's owner: the one node that serves it, by a lease taken and
-- renewed by conditional upserts (expiry on the database's clock). epoch
-- goes up on every take; every transaction that records the session's
-- durable state checks it (locking the row), so a node that lost the
-- session writes nothing more, and a take waits for such a transaction.
CREATE TABLE session_owners (
    session_id       uuid PRIMARY KEY,
    node_id          text COLLATE "C" NOT NULL,
    epoch            bigint NOT NULL,
    lease_expires_at timestamptz NOT NULL
);
CREATE INDEX session_owners_node ON session_owners (node_id);
