// Package session is the session engine: session lifecycle, file operations
// over an overlay, the mutation log, checkpoints, rollback, fork, rebase,
// merge (with the conflicts they keep: conflicts.go), and running
// commands on a session's view (Executor). It declares
// the Store interface it needs for metadata; package db implements it for
// Postgres and for the embedded SQLite default. It uses the registry of
// repositories (package repos) and the event log (package events), which
// it is handed and does not own. Changesets (submit, review, accept,
// layers, undo) are package changeset's, which acts on sessions through
// Manager's Hold, SessionInfo, CheckWrites (held.go) and CheckResolved
// (conflicts.go) and record's
// types, so neither package imports the other.
//
// Manager owns sessions and is composed of parts that own one job each:
// memory (unload.go: which sessions are loaded, their lock entries,
// unloading and the janitor), recorder (live.go and commit.go: the one write
// path, in the durability order below, and who hears of a commit: the event log
// and the observers), and the helpers on live, the one loaded session.
// Executor (exec.go) runs commands over a Manager's sessions; NewFS adapts
// a session's view to fs.FS. What the adapters show is composed here,
// once: a search's matches come with their context lines (grepBlob, as
// grep -C), and an edit batch's result builds its diff on demand
// (BatchResult.Patch, a dry run's from the contents it only queued).
//
// Invariants:
//   - Durability order. A mutation becomes durable in one order: its new
//     objects are fsynced (gitstore), refs/sessions/<id>/live is moved to
//     the tree of the new view, then the mutation, its overlay changes and
//     its events commit in one store transaction. Only after that commit
//     is the operation acknowledged and the new overlay visible. A crash
//     leaves at most objects or refs ahead of the store; loading a session
//     rebuilds its tree from the store and moves its refs back to match
//     (removing lock files a crash left under refs/sessions/<id>/).
//   - Group commit. Concurrent mutations of different sessions of one
//     repository become durable together (commit.go, over package
//     internal/groupcommit): one pack for all their objects, their live
//     refs' lock files fsynced together (while the pack is written) and
//     installed together once it is durable, one store transaction for
//     all their records. Each is acknowledged only when its batch is
//     durable, with its own result: its own preconditions (If-Match)
//     are checked before it joins, and a record the store refuses is
//     recorded alone while the others are recorded again without it. A
//     lone mutation does not wait for company; a batch takes what
//     arrived while the previous one committed, waiting at most a
//     millisecond for as many as the previous batch had. A request that
//     leaves before its batch starts is not written; once its batch
//     started, it is seen through.
//   - Nothing referenced is pruned. A session pins its base commit
//     (refs/sessions/<id>/base), its current view (…/live, a tree) and its
//     checkpoints (…/checkpoints/<n>, …/head), so `git gc --prune=now`
//     keeps every blob the overlay or a checkpoint references.
//   - All or nothing. Every operation runs on a copy of the overlay; a
//     rejected or failed operation leaves the session as it was. Paths are
//     validated by package overlay before anything is written; the
//     session's policy is checked on every path an operation reads or
//     writes, listings, search, diff and summary included, by one matcher
//     (policy and Glob in glob.go, over doublestar).
//   - The session's tree is kept incrementally: each mutation re-encodes
//     only the directories on the paths it touched (overlay.ChangeAt), and
//     equals a full rebuild of base plus overlay (checked by the model
//     test).
//   - Heads and bases move only by compare-and-swap, in git (refs) and in
//     the store.
//   - Revisions keep the caller's scope. Every revision a caller gives
//     (a base, a rebase's onto, a diff's against, and for package
//     changeset an accept's expected head) is resolved by ResolveRevision
//     (reach.go) within the reach the API put in the context
//     (record.Reach): a session token names its own refs
//     (refs/sessions/<id>/…), the repository's branches and tags, and
//     the commits reachable from them (gitstore.Scope, which says how
//     reachability is bounded); anything else is record.ErrNotFound, as
//     what does not exist is. Checkpoints (fork, rollback, against) are
//     looked up among the session's own only.
//   - Exec (a command on the session's view, package workdir) marks the
//     session busy while the command runs, without holding its lock: reads
//     go on and see the state before, every write is ErrBusy. What the
//     command changed is then recorded as one exec mutation by the same
//     path as every write (path rules, policy, limits), and what was
//     refused is undone in the scratch directory before the lock is let
//     go, so the directory and the record agree. The view a command sees
//     leaves out what the policy does not let the session read; without
//     namespaces (nothing hides the repository) such a session may not
//     run commands. Other clients follow a session's commands
//     (FollowExec, follow.go): the running one's start, output and end, or
//     the next one's; the output is also kept bounded (the newest 256 KiB)
//     for a follower that joins late, and the end is told once the
//     command is recorded and the session no longer busy. The registry
//     of running commands has its own lock, never held with a session's.
//     Anything that drops a
//     loaded session (unloading, expiry) must leave a busy one alone. A
//     session's scratch is removed when it ends (or, if a command still
//     runs, when that command ends); Executor.RemoveFinishedScratches, which the
//     daemon calls at start, removes those a crash left.
//   - Services (service.go, SPEC §15) are commands that outlive their
//     request, each in a sandbox of its own on the session's scratch
//     (workdir.Scratch.Serve), started between a Prepare and a Settle
//     like a command (busy meanwhile). Their ports are reached through
//     Unix sockets in the scratch (PortDialer; later commands get them
//     on their own loopback, workdir.PortLink). What they change is
//     recorded by CaptureServices as one mutation with op service at the
//     next capture point: the session's next command, a checkpoint, a
//     Hold (submit, accept), a service's stop. The registry of services
//     has its own lock, never taken while holding a session's; a session
//     that ends kills its services (recorder.ended), and one with a
//     running service is not unloaded for idleness. Every committed
//     mutation of a session with running services is brought into their
//     view before the write is answered (recorder.mutated,
//     pushToServices), under the session's lock, when no command is
//     between Prepare and Settle. Their state is
//     written to the scratch, so that a later daemon reports them
//     stopped by its restart.
//   - A command's environment is the repository's plain variables and
//     secrets (repos.Registry.Variables), then the session's own Env,
//     then the request's, each winning over the one before. The
//     secrets' values never leave in what Exec returns: its output (the
//     stream as it comes and the kept tails) and the argv it records are
//     masked (package secret). No write, by request or captured from a
//     command, records content holding a secret's value: rule secret.
//
// Concurrency: a Manager is safe for concurrent use. Each loaded session
// has one lock that serializes every write on it; different sessions run
// in parallel. Reads (Stat, Read, ListFiles, Search, TreeSummary, Diff)
// never wait behind writes: they hold the lock only to take a snapshot
// (view, files.go: the overlay as last published, which is frozen, the
// policy and the repository) and do their lookups and blob I/O after
// letting it go, as etcd's ConcurrentReadTx does. Every mutation
// publishes a new frozen overlay (it works on a clone), so a read sees
// the session as of the last mutation committed before it began, and a
// write never waits for a read's I/O. The read set has its own mutex
// (readset.go), so a read records what it read without the lock, and it
// counts the reads in flight: a session is not unloaded under one.
// memory.mu guards only the map of loaded sessions and the finished
// sessions handed to the janitor. Waiting for a session's lock honours
// the caller's context, and letting it go does no I/O (live.unlock).
// Observers are called with the session's lock held, so they must be
// quick (the session graph queues its work).
//
// Memory follows use: a finished session (accepted, rejected, abandoned,
// expired) leaves memory when the operation that finished it lets its
// lock go (at once when its read set has nothing to save and no read is
// in flight, else the manager's janitor saves it and then unloads the
// session, after the last such read), and a session
// unused for Config.IdleUnload (10 minutes) is unloaded by the janitor,
// after saving its read set; the next operation loads it again from the
// store. Expiry and abandon of a session that is not loaded change the
// store without loading it.
//
// A session is served by one process at a time: loading it breaks stale
// locks on its own refs, which is only safe when no other process writes
// them.
package session
