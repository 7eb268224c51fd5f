// Package clustersession is wiring: the session engine's store as a node
// of a cluster gives it, fenced by the node's ownership of sessions
// (cluster.Owners). Every write of a session's durable state (creation,
// state, head, base, mutations, overlay, reads, checkpoints, touches)
// first checks, in the same transaction, that this node owns the session
// at the epoch it holds, taking the session's lease on first use; a
// session another node owns is refused (cluster.OwnedError, 503) and a
// lease lost meanwhile fails the transaction (cluster.ErrFenced, 503),
// with nothing written.
//
// Invariants: the epoch of a session is looked up at most once per
// transaction (a take never waits for a row this transaction locked);
// leases are taken on the store's side pool, never inside the
// transaction's connection. The changeset service's transactions fence
// the one write of a session's durable state they make (an accept or a
// submit moving the session's state) through FenceState, which the
// session engine calls in the transaction it is handed.
package clustersession
