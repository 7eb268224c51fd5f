// Package graph is the session graph: what each live session changed, by
// path and by code symbol, over a shared index of its base, and the early
// warning when two live sessions of one repository change the same file or
// the same function.
//
// It owns:
//   - The base index (Index): the symbols of the files of one base tree,
//     resolved lazily per file or per directory (Build does the whole
//     tree), shared by every session on that base and kept in an LRU of
//     bases. Symbols are cached per blob id in a second LRU shared by all
//     bases and sessions, because blobs are immutable: an index costs a
//     few words per file it resolved.
//   - Symbols of Go files through go/parser and go/ast: package-level
//     functions, methods with their receiver, types, constants and
//     variables, with their spans (Key names one; equal keys with different
//     source text are a modified symbol). Other files are tracked by path
//     only. A file that does not parse is recorded with the reason and
//     never fails anything.
//   - Each live session's delta: per changed path its base and current
//     blob and symbol changes. It is updated incrementally from the
//     engine's committed mutations (writes, deletes, rollbacks: only the
//     touched files are reparsed). A session the graph meets for the first
//     time, or whose base moved (rebase), gets its delta from a diff of its
//     base and view trees, in time proportional to what it changed. When a
//     file stops parsing, the delta keeps the symbols of its last version
//     that parsed, and the reason. Lookups resolve the delta first, then
//     the base index.
//   - Overlap detection: per repository an inverted index from path to the
//     live sessions whose delta holds it, so a write costs time in
//     proportion to the sessions that changed the same paths, not to all
//     sessions. Each overlap is trial-merged (git's line merge of the two
//     versions over their common base, nothing written; "unknown" when
//     the bases differ) and reported to both sessions as an
//     overlap.detected event, once per new finding (the shared symbols
//     and the merge outcome), not on every write.
//   - Review summaries of any two trees (Summary), for changesets.
//
// The graph learns of committed mutations and ended sessions through
// Mutated and Closed, in types of its own, and records its events in the
// event log it is handed (an EventLog: events.Log): it is a peer of the
// session engine and imports none of it (internal/graphsession wires the
// two together). It is in memory:
// after a restart a session reappears the next time it writes.
//
// Concurrency: a Graph is safe for concurrent use. The engine's observer
// calls Mutated and Closed with the session's lock held and in commit
// order per session; they only queue the work (per repository, at most one job per
// session: a mutation arriving while the previous one waits replaces it,
// and the delta is rebuilt from the trees) and return. One worker
// goroutine per repository with queued work does it in order, so only one
// goroutine at a time updates a session's delta; Close cancels and joins
// the workers, and Sync waits for the queued work (tests, shutdown).
// Graph.mu guards the map of repositories and sessions; each repository's
// mutex guards its sessions, its inverted index and what was reported.
// Blobs are read and parsed, and trial merges run, without holding a
// repository's mutex. Stored file deltas and Files are immutable.
package graph
