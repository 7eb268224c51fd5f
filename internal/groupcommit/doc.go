// Package groupcommit owns gathering concurrent durable writes into
// batches, so that many writers share one commit (one pack write, one
// fsync, one store transaction) instead of paying for one each, as etcd
// batches raft entries and bbolt's Batch does. It knows nothing about what
// a write is: its user hands it a commit function that makes a whole batch
// durable and says, per item, whether that item failed.
//
// Invariants:
//   - An item is acknowledged (Do returns) only after the commit of the
//     batch that holds it returned, with that item's own result: a failed
//     item fails only itself; the others of its batch succeed or fail on
//     their own.
//   - Batches never overlap: a Committer runs one commit at a time, so a
//     batch's commit sees the effects of every earlier batch.
//   - No added latency when alone: a batch starts at once when the
//     previous one held a single item. After a batch of n > 1 items, the
//     next waits at most Options.MaxDelay for n items (or MaxEntries)
//     before it starts. Writes that arrive while a batch commits form the
//     next one.
//
// Concurrency: a Committer is safe for concurrent use. There is no
// background goroutine: the first caller of an idle Committer leads (runs
// the commit for its batch), and hands the lead to the first waiter of
// the next batch when it is done, so nothing needs closing.
package groupcommit
