-- Initial schema. Object ids are 40-digit hex text (NULL for none); paths,
-- names and branches use the "C" collation so ordering is byte order, the
-- same as SQLite's BINARY.

CREATE TABLE repos (
    name       text COLLATE "C" PRIMARY KEY,
    path       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE sessions (
    id             uuid PRIMARY KEY,
    repo           text COLLATE "C" NOT NULL REFERENCES repos (name),
    parent         uuid REFERENCES sessions (id),
    agent_id       text NOT NULL,
    agent_name     text NOT NULL,
    intent         text NOT NULL,
    base_commit    text,
    base_ref       text NOT NULL,
    mode           text NOT NULL,
    state          text NOT NULL,
    policy         jsonb NOT NULL,
    head           text,
    seq            bigint NOT NULL DEFAULT 0,
    checkpoints    integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL,
    last_active_at timestamptz NOT NULL,
    expires_at     timestamptz
);
-- GET /v1/sessions?repo=&state= and the repo-only listing (prefix).
CREATE INDEX sessions_repo_state ON sessions (repo, state, created_at);
-- GET /v1/sessions?agent_id=
CREATE INDEX sessions_agent ON sessions (agent_id, created_at);
-- The expiry sweep looks only at live sessions.
CREATE INDEX sessions_expiry ON sessions (expires_at) WHERE state IN ('active', 'submitted');

CREATE TABLE overlay_entries (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    status     text NOT NULL,
    blob       text,
    mode       integer NOT NULL,
    PRIMARY KEY (session_id, path)
);

-- The primary key serves "mutations after a sequence".
CREATE TABLE mutations (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    op         text NOT NULL,
    paths      jsonb NOT NULL,
    old_blobs  jsonb NOT NULL,
    new_blobs  jsonb NOT NULL,
    actor      text NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE checkpoints (
    id         uuid PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n          integer NOT NULL,
    commit_oid text NOT NULL,
    tree_oid   text NOT NULL,
    parent_oid text,
    seq        bigint NOT NULL,
    label      text NOT NULL,
    message    text NOT NULL,
    created_at timestamptz NOT NULL,
    UNIQUE (session_id, n)
);

CREATE TABLE changesets (
    id              uuid PRIMARY KEY,
    session_id      uuid NOT NULL REFERENCES sessions (id),
    repo            text COLLATE "C" NOT NULL REFERENCES repos (name),
    target_branch   text COLLATE "C" NOT NULL,
    intent          text NOT NULL,
    status          text NOT NULL,
    base_commit     text,
    head_commit     text,
    accepted_commit text,
    agent_id        text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- GET /v1/changesets?repo=&status=
CREATE INDEX changesets_repo_status ON changesets (repo, status, created_at);
CREATE INDEX changesets_session ON changesets (session_id, created_at);

CREATE TABLE reviews (
    id           uuid PRIMARY KEY,
    changeset_id uuid NOT NULL REFERENCES changesets (id) ON DELETE CASCADE,
    verdict      text NOT NULL,
    body         text NOT NULL,
    author       text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX reviews_changeset ON reviews (changeset_id, created_at);

CREATE TABLE review_comments (
    review_id uuid NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
    ord       integer NOT NULL,
    path      text NOT NULL,
    line      integer NOT NULL,
    body      text NOT NULL,
    PRIMARY KEY (review_id, ord)
);

CREATE TABLE layers (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo          text COLLATE "C" NOT NULL REFERENCES repos (name),
    branch        text COLLATE "C" NOT NULL,
    changeset_id  uuid NOT NULL UNIQUE REFERENCES changesets (id),
    commit_oid    text NOT NULL,
    state         text NOT NULL,
    revert_commit text,
    accepted_at   timestamptz NOT NULL,
    undone_at     timestamptz
);
-- GET /v1/repos/{repo}/layers?branch=, newest first.
CREATE INDEX layers_branch ON layers (repo, branch, id DESC);

-- Event ids come from the counters row, not a sequence: taking the row lock
-- until commit makes ids increase in commit order, so a client resuming
-- after id n never misses a later-committed smaller id.
CREATE TABLE counters (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO counters (name, value) VALUES ('events', 0);

CREATE TABLE events (
    id         bigint PRIMARY KEY,
    repo       text COLLATE "C" NOT NULL,
    session_id uuid,
    type       text NOT NULL,
    payload    jsonb NOT NULL,
    at         timestamptz NOT NULL
);
CREATE INDEX events_repo ON events (repo, id);
CREATE INDEX events_session ON events (session_id, id) WHERE session_id IS NOT NULL;
