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
//   - Batches start in order, one at a time: a batch's commit starts
//     when the previous one's ended or let it start (CommitFunc's next),
//     so a commit made of stages may run as a pipeline, one batch in its
//     first stage while the one before is in its last; the commit keeps
//     the order of its later stages itself.
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
