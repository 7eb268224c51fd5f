// Package cluster is what makes several sessiond nodes over one
// PostgreSQL one cluster (SPEC section 16). What exists now: nodes. Each
// node joins with an id and the URL the others reach it at, keeps a row
// in the store's nodes table and renews it by a heartbeat (every 2 s by
// default) carrying what it holds (sessions in memory, running commands);
// a node whose heartbeat is older than the lease (15 s by default) is
// dead to the others. Session ownership leases, forwarding, takeover and
// drain are not built yet.
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
//
// Concurrency: a Cluster is safe for concurrent use; Run is called once.
package cluster
