// Package db implements the stores the engines declare, session.Store,
// repos.Store, events.Store and changeset.Store (Store.Changesets, over
// the same database and its transactions), twice: on Postgres through a pgx pool (OpenPostgres) and,
// as the zero-setup default, on an embedded SQLite file through the
// pure-Go modernc.org/sqlite driver (OpenSQLite). Both run the same queries
// (store.go) over their own runner, apply their own embedded migrations
// (migrations/<dialect>/NNNN_*.sql) at open, and pass one conformance suite
// (conformance_test.go) through both interfaces.
//
// Invariants:
//
//   - Session head, session state, changeset status and layer state change
//     only by compare-and-swap: UPDATE … WHERE col = old; zero rows is a
//     *record.ConflictError carrying the current value.
//   - A session's mutation sequence numbers are 1, 2, 3, … with no repeat or
//     gap, also with writers in several processes: the number comes from
//     UPDATE sessions SET seq = seq + 1 … RETURNING seq in the transaction
//     that records the mutation and its overlay changes, so the session row
//     stays locked (Postgres) or the database write lock held (SQLite) until
//     commit, and a rollback gives the number back.
//   - Event ids increase in commit order (a counter row locked until commit),
//     so a reader resuming after id n never misses an event.
//   - No driver error leaves the package: errors.go translates them into
//     record's ErrNotFound, ErrDuplicate, ErrConflict,
//     ErrUnavailable, ErrNoSpace (SQLITE_FULL, Postgres disk_full: a
//     *record.NoSpaceError naming the store), or an
//     opaque error that keeps only the driver's message. Context errors
//     stay context.Canceled and context.DeadlineExceeded.
//   - Object ids are stored as 40-digit hex text, NULL for the zero id;
//     times in UTC with microsecond precision.
//   - A repository's secrets arrive sealed (package secret) and are stored
//     as they come, base64 in repo_environments.secrets: no plain value
//     ever reaches the database.
//
// Durability: a write is acknowledged only after its transaction commits.
// Postgres commits are durable with the server's default synchronous_commit.
// SQLite runs in WAL mode with synchronous=FULL, which fsyncs the WAL at
// every commit. synchronous=NORMAL would already survive kill -9 of the
// process (the WAL write reaches the OS before COMMIT returns), but a power
// loss or kernel crash could then drop the last acknowledged writes; FULL
// costs one fsync per commit and gives the same promise as Postgres and as
// the fsynced git objects the rows point at.
//
// Concurrency: Postgres and SQLite are safe for concurrent use by many
// goroutines and processes. The Tx passed to InTx is not; it belongs
// to the goroutine running the transaction. In SQLite all writes of one
// process go through a single connection, so a long transaction delays the
// process's other writers.
package db
