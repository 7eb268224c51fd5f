-- Initial schema, the SQLite form of postgres/0001_initial.sql: the same
-- tables, columns and indexes. Differences: STRICT tables; uuid and jsonb
-- are TEXT; timestamps are INTEGER microseconds since the Unix epoch (UTC);
-- layers.id is an AUTOINCREMENT rowid. BINARY collation is byte order.

CREATE TABLE repos (
    name       text PRIMARY KEY,
    path       text NOT NULL,
    created_at integer NOT NULL
) STRICT;

CREATE TABLE sessions (
    id             text PRIMARY KEY,
    repo           text NOT NULL REFERENCES repos (name),
    parent         text REFERENCES sessions (id),
    agent_id       text NOT NULL,
    agent_name     text NOT NULL,
    intent         text NOT NULL,
    base_commit    text,
    base_ref       text NOT NULL,
    mode           text NOT NULL,
    state          text NOT NULL,
    policy         text NOT NULL,
    head           text,
    seq            integer NOT NULL DEFAULT 0,
    checkpoints    integer NOT NULL DEFAULT 0,
    created_at     integer NOT NULL,
    last_active_at integer NOT NULL,
    expires_at     integer
) STRICT;
-- GET /v1/sessions?repo=&state= and the repo-only listing (prefix).
CREATE INDEX sessions_repo_state ON sessions (repo, state, created_at);
-- GET /v1/sessions?agent_id=
CREATE INDEX sessions_agent ON sessions (agent_id, created_at);
-- The expiry sweep looks only at live sessions.
CREATE INDEX sessions_expiry ON sessions (expires_at) WHERE state IN ('active', 'submitted');

CREATE TABLE overlay_entries (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text NOT NULL,
    status     text NOT NULL,
    blob       text,
    mode       integer NOT NULL,
    PRIMARY KEY (session_id, path)
) STRICT;

-- The primary key serves "mutations after a sequence".
CREATE TABLE mutations (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    op         text NOT NULL,
    paths      text NOT NULL,
    old_blobs  text NOT NULL,
    new_blobs  text NOT NULL,
    actor      text NOT NULL,
    at         integer NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

CREATE TABLE checkpoints (
    id         text PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n          integer NOT NULL,
    commit_oid text NOT NULL,
    tree_oid   text NOT NULL,
    parent_oid text,
    seq        integer NOT NULL,
    label      text NOT NULL,
    message    text NOT NULL,
    created_at integer NOT NULL,
    UNIQUE (session_id, n)
) STRICT;

CREATE TABLE changesets (
    id              text PRIMARY KEY,
    session_id      text NOT NULL REFERENCES sessions (id),
    repo            text NOT NULL REFERENCES repos (name),
    target_branch   text NOT NULL,
    intent          text NOT NULL,
    status          text NOT NULL,
    base_commit     text,
    head_commit     text,
    accepted_commit text,
    agent_id        text NOT NULL,
    created_at      integer NOT NULL,
    updated_at      integer NOT NULL
) STRICT;
-- GET /v1/changesets?repo=&status=
CREATE INDEX changesets_repo_status ON changesets (repo, status, created_at);
CREATE INDEX changesets_session ON changesets (session_id, created_at);

CREATE TABLE reviews (
    id           text PRIMARY KEY,
    changeset_id text NOT NULL REFERENCES changesets (id) ON DELETE CASCADE,
    verdict      text NOT NULL,
    body         text NOT NULL,
    author       text NOT NULL,
    created_at   integer NOT NULL
) STRICT;
CREATE INDEX reviews_changeset ON reviews (changeset_id, created_at);

CREATE TABLE review_comments (
    review_id text NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
    ord       integer NOT NULL,
    path      text NOT NULL,
    line      integer NOT NULL,
    body      text NOT NULL,
    PRIMARY KEY (review_id, ord)
) STRICT;

CREATE TABLE layers (
    id            integer PRIMARY KEY AUTOINCREMENT,
    repo          text NOT NULL REFERENCES repos (name),
    branch        text NOT NULL,
    changeset_id  text NOT NULL UNIQUE REFERENCES changesets (id),
    commit_oid    text NOT NULL,
    state         text NOT NULL,
    revert_commit text,
    accepted_at   integer NOT NULL,
    undone_at     integer
) STRICT;
-- GET /v1/repos/{repo}/layers?branch=, newest first.
CREATE INDEX layers_branch ON layers (repo, branch, id DESC);

-- Event ids come from the counters row, as in Postgres; SQLite serializes
-- writers anyway, so ids increase in commit order.
CREATE TABLE counters (
    name  text PRIMARY KEY,
    value integer NOT NULL
) STRICT;
INSERT INTO counters (name, value) VALUES ('events', 0);

CREATE TABLE events (
    id         integer PRIMARY KEY,
    repo       text NOT NULL,
    session_id text,
    type       text NOT NULL,
    payload    text NOT NULL,
    at         integer NOT NULL
) STRICT;
CREATE INDEX events_repo ON events (repo, id);
CREATE INDEX events_session ON events (session_id, id) WHERE session_id IS NOT NULL;
