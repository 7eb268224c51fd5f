package graph

import (
	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
)

// Mutation is one committed mutation of a session as the graph needs it:
// whose, on which base, the files whose content changed, and the trees.
// The wiring builds it from the engine's observer event, so the graph
// depends on none of the engine's types.
type Mutation struct {
	Session    uuid.UUID
	Repo       string // the repository's name
	AgentID    string
	BaseCommit gitstore.OID
	// Ended: the session reached a terminal state; Closed follows.
	Ended bool
	Seq   int64
	// Changes are the files whose content changed: Old and New are zero
	// for none.
	Changes []FileChange
	// Git is the session's repository, BaseTree its base tree and Tree the
	// tree of its view after the mutation.
	Git      *gitstore.Repo
	BaseTree gitstore.OID
	Tree     gitstore.OID
}

// FileChange is one file a mutation changed, by blob id.
type FileChange struct {
	Path     string
	Old, New gitstore.OID
}
