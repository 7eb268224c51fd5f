// Package overlay holds one session's changes over a base tree and resolves
// reads, listings and tree building through them.
//
// An Overlay maps paths to entries: added or modified (a blob id and a
// mode) or deleted (a whiteout). It declares the small read-only view of
// the base it needs (Base), which a gitstore.TreeView satisfies, and the
// tree builder it hands its changes to (TreeBuilder).
//
// This package is also the one place where paths are validated: every rule
// of the specification's "bad input" section is checked by ValidatePath
// (syntax), ValidateSymlinkTarget (an empty symlink target) and
// Overlay.CheckPut / Overlay.Delete (rules that depend on the merged
// view), and a violation is a *PathError naming the rule. The
// content rules of .gitmodules and .gitattributes (CheckContent, git
// fsck's gitmodules* and gitattributes* checks, with a config parser that
// follows git's) live here too: PutSized runs them on every blob it puts
// under such a name, reading it through ReadBlobsWith when the caller has
// not stored it yet, and the merge engine runs them before it writes a
// merged tree.
//
// # Invariants
//
//   - The overlay never holds an entry that removing would not change the
//     merged view: writing back the base content removes the entry, and a
//     whiteout only ever sits on a path the base has.
//   - A whiteout at a directory hides its whole subtree in one entry;
//     deleting a directory collapses every entry under it into that one
//     whiteout. Entries below a whiteout recreate content in a directory
//     that starts empty.
//   - An added or modified entry at P shadows the base's P and everything
//     under it, and no entry sits below it.
//   - The merged view has no empty directories, as in git: when deletions
//     empty a base directory, the entries under it collapse into a whiteout
//     at that directory.
//   - A frozen overlay never changes: no read writes it, and a change
//     panics.
//
// # Cost
//
// A write costs what its path holds, never what its directory or the
// overlay holds: the caseCollision rule looks the new name up in two
// indexes by folded name (the overlay's children, and the base's
// children of a directory, folded once per directory and shared with
// clones) instead of listing the directory, and the entries' git-order
// keys are merged in by the next call that needs them sorted, so a run
// of n writes costs one sort, not n inserts into the middle of a slice.
// Touched names what changed since a Clone, so the caller can tell what
// an operation changed without comparing every entry.
//
// # Concurrency
//
// An Overlay being changed is not safe for concurrent use: its owner
// serializes every call, and Clone gives an independent copy (for fork,
// dry runs and atomic batches). Freeze ends the changes: a frozen overlay
// is an immutable snapshot (its lazily merged sorted keys are settled
// once, and any change panics), safe for any number of concurrent
// readers. A session publishes each new overlay frozen and changes a
// clone of it, so readers take the current snapshot under a brief lock
// and do their blob I/O after letting it go (as etcd's ConcurrentReadTx
// does). The base's folded-name cache is the one thing a clone shares,
// and a mutex guards it; the base itself (a gitstore.TreeView) is safe
// for concurrent use.
package overlay
