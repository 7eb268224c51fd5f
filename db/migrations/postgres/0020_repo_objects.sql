-- The objects of sessions' writes in a cluster (the blobs of their
-- mutations, the trees and commits of their checkpoints), stored in the
-- transaction that records what needs them, so that any node can rebuild
-- a session whose owner died. Content-addressed and kept once per
-- repository: oid is the object's git id (hex), kind git's type number
-- (1 commit, 2 tree, 3 blob), data its content without git's header.
CREATE TABLE repo_objects (
    repo text COLLATE "C" NOT NULL REFERENCES repos (name),
    oid  text COLLATE "C" NOT NULL,
    kind smallint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (repo, oid)
);
