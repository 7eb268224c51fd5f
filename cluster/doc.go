// Package cluster is what makes several sessiond nodes over one
// PostgreSQL one cluster (SPEC section 16). What exists now: nodes. Each
// node joins with an id and the URL the others reach it at, keeps a row
// in the store's nodes table and renews it by a heartbeat (every 2 s by
// default) carrying what it holds (sessions in memory, running commands);
// a node whose heartbeat is older than the lease (15 s by default) is
// dead to the others. Session ownership: Owners holds this node's session
// leases (a row per session with node_id, epoch and lease_expires_at,
// taken and renewed by conditional upserts, the epoch up on every take),
// renews them together and trusts each only until its own monotonic
// deadline (lease minus a margin, counted from before the statement was
// sent); the store's CheckSessionEpoch is the fence a transaction that
// records a session's durable state runs (the session engine's store is
// fenced by internal/clustersession in a cluster). Objects: the objects
// of sessions' writes are kept in the store too (ObjectTx, content-
// addressed per repository), saved by SaveObjects in the transaction
// that records what names them; FillObjects (and Filler, which fetches
// the origin for what the store lacks, a session's base) brings them
// into a node's clone when it takes a session over or reads a changeset
// another node wrote; the store's sweep (package db) deletes them once no
// live session or unsettled changeset of their repository needs them.
// MCP sessions: the id a node issues (MCPSessionID) names the node, so
// another node can send a request of it there (MCPSessionNode).
// Forwarding itself (Router) and drain are in route.go and the api package.
//
// Invariants:
//   - Liveness is judged on the database's clock (now() in the store's
//     statements), never by comparing two machines' clocks.
//   - One live process per node id: Join refuses (ErrNodeLive) while the
//     id's row is live and not stopped; a process's heartbeat renews only
//     the row of its own incarnation, and one that finds its id taken by
//     another (it was dead past the lease, and a new process joined) gets
//     ErrIdentityLost and must stop.
//   - A node that stops cleanly marks its row stopped, so its id can join
//     again at once.
//   - An object is written into a clone only with everything it reaches
//     (FillObjects writes what it brings in one durable step, after
//     finding all of it), so a clone's objects stay whole and a walk may
//     stop at any object the clone holds.
//   - A session lease is trusted only before its deadline by this
//     process's monotonic clock; a renewal fenced by another owner, or
//     none before the deadline, drops it and reports it to Lost.
//
// Concurrency: a Cluster is safe for concurrent use; Run is called once.
package cluster
