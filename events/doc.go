// Package events owns the durable event log that streams follow and the
// wake-ups that tell a stream to look again.
//
// An event is appended in the store transaction of the change it
// describes (the session engine's mutations and state changes, a
// changeset's submit, review, accept and undo), through that
// transaction's Appender, so a change and its events commit together or
// not at all. After the commit the writer calls Log.Notify. Events
// appended outside any change (the session graph's overlap findings) go
// through Log.Append, which notifies itself.
//
// Invariants:
//   - The store is the truth: ids increase in commit order, so a stream
//     resuming after id n (Last-Event-ID, across restarts) never misses an
//     event, and one starting after Log.Latest (the newest id) sees only
//     what comes next. A wake-up carries no event; it only says "look again", so a
//     lost or extra wake-up costs a query, never an event.
//   - Wake-ups go through one seam, Waker: in one process Local broadcasts
//     on a channel; across processes a Waker over PostgreSQL LISTEN/NOTIFY
//     takes its place without touching the log or its writers.
//
// Concurrency: a Log and Local are safe for concurrent use. Each stream
// Subscribe starts is one goroutine, which ends when its context does.
package events
