// Package gitstore is sessiond's git object layer and the only package that
// imports go-git.
//
// It owns object ids and modes, immutable decoded trees cached by id,
// blob and entry lookup at a path, listing under a prefix in git order,
// durable object writes, the tree builder, commits, and compare-and-swap
// ref updates.
//
// Invariants:
//   - Objects are immutable, so decoded trees and small blobs are cached by
//     id in LRUs and never invalidated. Everything handed out is shared and
//     read-only.
//   - Writes are durable before they return: a Batch writes one loose object
//     or one pack plus index, each fsynced, renamed into place and its
//     directory fsynced. Nothing (a ref, a database row) may point at an
//     object before the Flush that wrote it returns. An object that already
//     exists is not written again; its file's mtime is refreshed, as git
//     does, so gc's grace period starts again.
//   - Trees are written in git's canonical form: entries sorted with a
//     directory comparing as "name/", canonical modes, no empty trees below
//     the root. The builder re-encodes only the directories on changed
//     paths and keeps every other subtree id.
//   - Refs change only by compare-and-swap under git's own "<ref>.lock"
//     file, which is fsynced before it is renamed over the ref, so the git
//     CLI and sessiond can update one repository at once. PrepareRefs and
//     PreparedRefs.Commit do several such swaps at once (each on its own,
//     not atomic together) and share their fsyncs: the lock files are
//     written and fsynced together (while the objects they will name are
//     still being written, if the caller likes), then renamed, then their
//     directories fsynced together.
//
// Who does what inside the package: Repo is the repository (reads,
// resolution, the entry points); the ref files, with their one locking
// discipline (refLock), are refFiles's (refs.go: reading, listing,
// compare-and-swap, packed-refs); new object files are objectWriter's
// (write.go: loose objects and packs, and their bookkeeping); the
// alternates are alternateSet's (alternates.go); housekeeping's plan is
// package housekeeping's, carried out here (housekeep.go), its failures
// logged and counted by its Manager.
//   - Memory does not follow the objects and packs a long-running process
//     writes: the caches are LRUs, the in-memory index of its own packs
//     holds at most Options.OwnIndexSize objects (the oldest packs are
//     forgotten and read like any other), what it remembers per pack is
//     kept for the packs the directory still lists, and the lookups in own
//     packs it does not index, and the one that freshens objects in other
//     packs, read index files on disk (all they keep is the first
//     four bytes of each id of an own pack, so a lookup of an id a pack
//     lacks costs no I/O: 4 bytes an object, where a go-git storage holds
//     28). go-git's storages, which keep the decoded
//     index of every pack they list, one copy per storage, never list own
//     packs (objectFS hides them); they read git's packs and loose objects.
//
// Concurrency: a Repo is safe for concurrent use. go-git storages are not,
// so each read borrows one from a pool and copies out what it needs. A
// Batch belongs to one goroutine.
//
// Objects this process writes go into its own undeltified packs, which it
// reads itself (opening the pack per read; the caches absorb most reads),
// as it reads every own pack, whichever process wrote it, once it knows it
// is one (packmeta.go); the pooled storages re-read pack indexes when a
// read misses.
//
// Crash debris hides nothing. go-git lists packs by their .pack file and
// fails every packed lookup when one has no index; git lists them by
// .idx and skips what it cannot use. The storages therefore see the pack
// directory through objectFS, which lists only packs that pass git's own
// checks (an index of the right size for its object count, a pack whose
// header and trailing checksum match it, and, for go-git, a name that is
// that checksum). A loose object that does not inflate is hidden so the
// packs are searched, as git does. Temporary files are ignored by name.
// Writes follow git's order: tmp_pack_* and tmp_idx_* (or tmp_obj_*)
// written and fsynced, the pack renamed into place, then its index, then
// the directory fsynced (internal/failpoint names each step for the crash
// tests).
//
// A missing object is damage, not absence: reading an object the
// repository lacks (a tree, commit, ref or row names it) is an
// *ObjectError with ErrMissingObject, one that does not decode an
// *ObjectError with ErrCorrupt; neither is ErrNotFound, so a lookup that
// meets a missing subtree never reports the path as absent. Only
// ResolveRevision, given an id by a caller, answers ErrNotFound for it.
//
// A write the device or a quota refuses for lack of space (ENOSPC,
// EDQUOT) keeps that error in its chain (IsNoSpace) and goes through
// Options.NoSpace, with the part that is full (objects, refs), before it
// is returned; CheckSpace probes whether it has room again.
//
// Scoped resolution (scope.go, reach.go): ResolveRevisionIn and
// ResolveTreeIn resolve for a caller that sees only part of the
// repository (a Scope: the shared refs, HEAD and refs/heads/, refs/tags/,
// refs/remotes/, its own refs, and what they reach). The scope is
// checked where a revision enters (a ref name, a full or abbreviated id);
// what it does not see answers ErrNotFound exactly as what does not
// exist, and never makes an abbreviated id ambiguous. Reachability is not
// a walk per request: a name is checked by its spelling alone, an id
// first against the values of the refs the scope sees, then against what
// the Repo knows the shared refs reach (one walk of history, newest
// first, kept and extended as far as the oldest commit asked about,
// extended again when a branch fast-forwards and restarted only when a
// ref is deleted or moved back), and last by a walk from the caller's own
// refs that stops at commits already known. A walk stops once everything
// left is older than the commit asked about by more than a day, so a
// commit whose descendants are dated more than a day before it is
// refused, never wrongly shown. Memory: one entry per commit walked.
//
// Housekeeping is package gitstore/housekeeping's: its strategy decides
// and its Manager runs it (when a Repo opens, every HousekeepInterval and
// after every few packs the Repo writes, failures logged and counted);
// gitstore carries each plan out over the object directory (objectDir,
// housekeep.go), with its own pack writer. A run removes debris older
// than a grace period (an hour: younger files may be a writer's work in
// progress), packs loose objects once there are many, and merges the
// packs sessiond writes, whichever of its processes wrote them,
// geometrically, so a repository holds at most 50 packs between git gc
// runs. sessiond's packs are told from git's by
// their content: every object whole (git's packs carry deltas) and no
// .keep, .promisor, .bitmap or .mtimes file beside them. The new pack's
// objects are sorted by id, so two runs merging the same set write the
// same pack. A run costs the same however many objects the repository
// holds: what it learns of a pack (own or not, how many objects, whether
// another pack holds all of them) is a fact of the pack's content, kept
// until the pack goes, so a run reads the index and entries only of the
// packs it has not seen and of those it merges; a merge copies their
// entries as they are, each checked against its CRC-32 as git repack
// reuses them, streaming into the new pack, and holds only the new
// index. Writers cannot outrun it: once the packs written since a run
// listed the directory reach a quarter of the limit, a writer waits for a
// run to end before its write is acknowledged.
//
// Retirement is decided from the directory, not from memory, so it holds
// across kills: an own pack is superseded when another own pack holds
// every object of it and ranks above it (more objects, or the same ones
// and a greater name: the rank depends on content only, so every process
// ranks alike). A superseded pack is never merged again and is deleted,
// by any process, once its cover's index is RetireDelay old (a minute),
// so a git command that listed the packs before the cover appeared still
// finds it. The wait gives way to the pack limit: a run leaves at most a
// quarter of the limit waiting (less the live packs), deleting first the
// packs whose cover is oldest and, after a merge, those of the merged
// packs there is no room for, so the packs written before the next run
// have room under the limit however fast processes restart. Close
// deletes, at once, the packs its Repo merged that are still superseded.
//
// Nothing referenced is ever lost: a pack or loose file is deleted only
// after a pack holding every object it held is durable and in place (the
// pack directory is fsynced before any deletion); the rank is a strict
// order, so no two packs cover each other and every superseded pack's
// objects are in a pack that is not superseded, which no sessiond
// deletes. Readers never fail: this process's own index is re-pointed at
// the new pack before the old ones go, and the deletions run while every
// pooled storage is taken, so none of this process's readers lists the
// directory half way through them (fresh storages list it afterwards); a
// reader that opened an old pack keeps its descriptor; a reader of
// another process that listed the packs before they went finds its
// object missing or a pack or index gone and lists the directory again (the
// new pack is in place by then). A pack listed between its rename and
// its index's is skipped only until the index is there.
//
// Beside the git CLI: git repack and git gc delete only packs they listed
// when they started, after writing a pack with their objects, so they
// never delete the pack a consolidation just wrote; a consolidation that
// finds one of its packs deleted under it (by git or by another sessiond)
// stops and deletes nothing. Housekeeping merges and deletes no pack while
// git gc holds gc.pid. A git command that lists packs and does not re-scan
// (git fsck, a git gc that started first) and runs longer than the wait
// may stop with an error when superseded packs go under it, as beside any
// concurrent repack; it loses nothing and succeeds when run again. Beside
// a second sessiond on the same repository: each process's housekeeping
// merges every live own pack, whoever wrote it, and sees the other's
// merges as superseded packs; two runs at once either write the same pack
// or one stops when the other deletes a pack it reads; a process whose own
// index names a deleted pack forgets it and reads through the storages.
//
// Attributes, config and the index file (attributes.go, wildmatch.go,
// config.go, index.go): the attributes git check-attr gives a path, from
// the .gitattributes files of a tree and info/attributes, with git's
// wildmatch patterns, macros and precedence; the repository's own config
// file (neither reads a user's global or the system's files); and the
// encoding of a work tree's index file, which package worktree reads and
// writes.
//
// Alternates (alternates.go): a repository whose objects/info/alternates
// names other object directories (git clone --shared or --reference, an
// object pool) reads through them as git does, recursively, with relative
// and absolute paths. They are only read: every write goes into the
// repository itself, and an object an alternate already has is neither
// copied nor touched.
package gitstore
