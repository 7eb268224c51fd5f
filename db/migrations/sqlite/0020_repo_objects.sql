-- The objects of sessions' writes in a cluster: a cluster needs
-- PostgreSQL; the table is here so both stores have one schema and pass
-- one conformance suite.
CREATE TABLE repo_objects (
    repo TEXT NOT NULL REFERENCES repos (name),
    oid  TEXT NOT NULL,
    kind INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (repo, oid)
);
