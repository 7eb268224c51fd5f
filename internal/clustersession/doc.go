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
// The same transactions carry the objects their records name into the
// store (cluster.SaveObjects): a mutation's new blobs, an overlay's
// blobs (those the store lacks), a checkpoint's commit with the trees and
// blobs it has beyond the session's base. The trees of a live view are
// not stored: a node that loads the session builds them from its base
// and overlay. Claim takes a session's lease before the engine loads it
// or an accept pushes it, so a node holds in memory only sessions it
// owns.
//
// Invariants: the epoch of a session is looked up at most once per
// transaction (a take never waits for a row this transaction locked);
// leases are taken on the store's side pool, never inside the
// transaction's connection. The changeset service's transactions fence
// the one write of a session's durable state they make (an accept or a
// submit moving the session's state) through FenceState, which the
// session engine calls in the transaction it is handed.
package clustersession
