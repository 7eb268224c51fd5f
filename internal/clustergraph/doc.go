// Package clustergraph teaches a node's session graph the deltas of the
// sessions other nodes of its cluster own, so that overlap warnings span
// nodes (SPEC section 16). It follows every repository's event log; for
// each file written or deleted by a session this node does not serve, it
// reads the file's new version through the API (forwarded to the owner),
// stores the blob in this node's clone, keeps the session's view tree
// there (its base tree with the changes applied, gitstore.BuildTree) and
// hands the graph the mutation, as the session engine's observer does for
// the sessions this node serves. A session first met is read whole (its
// changed files). It is wiring only.
//
// Limits: a session that another node rebases is followed from its old
// base until its next write after this node meets it again; an overlap
// between a session here and one elsewhere may be reported by both
// nodes (each graph finds it), so a warning can come twice.
//
// Concurrency: Run is one goroutine per repository followed; the state of
// the sessions followed is that goroutine's own.
package clustergraph
