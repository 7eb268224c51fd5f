// Package merge owns changes between trees and bringing changes
// together: tree diffs with rename detection, unified and JSON patches
// with stats, a line diff and a three-way line merge that make git's
// choices, the three-way tree merge with structured conflicts, and the
// operations built on it (cherry-pick, revert, rebase, merge of one
// session's changes into another), and selections of a patch's files and
// hunks for a partial accept (select.go: the base with only the selected
// hunks applied), and a patch's syntax tokens (Patch.Highlight, each
// side lexed whole by package highlight). Package changeset's accept, layers and undo, which need
// the store and move refs, are built on Rebase, Revert and Select here.
//
// Invariants:
//   - Git fidelity. The line diff follows xdiff (Myers with git's
//     heuristics and group sliding; the indent heuristic for patches, not
//     for merges, as git; histogram for the line merges of tree merges,
//     which git's merge-ort hard-codes); the line merge follows xdl_merge
//     at git's merge level; the tree merge follows merge-ort's rules. A clean merge
//     yields the same tree id as git merge-tree --write-tree and the same
//     conflicted paths when it conflicts (see the differential tests),
//     directory rename detection included, in each of git's
//     merge.directoryRenames modes (MergeOptions.DirectoryRenames; the
//     default, as in git, moves a file added to a renamed directory and
//     reports it as a file_location conflict). Where git's choice depends
//     on its hash table order (ties between equally likely new places of a
//     directory, the order of deferred directories) ours is the sorted
//     order.
//   - Hunk headers carry git's function context (funcname.go): the
//     driver the diff attribute names in the new tree's .gitattributes
//     (PatchOptions.AttrTree), its pattern from the repository's config
//     or git's built-in ones translated from POSIX to RE2, else git's
//     default rule; the differential tests compare every header with
//     git diff's.
//   - Cost proportional to change. Diffs and merges descend only into
//     subtrees whose ids differ; a merge takes a directory only one side
//     changed whole, without reading it, unless rename detection needs
//     its files (git's trivial directory merge); the merged tree is built
//     from ours by gitstore's builder, which re-encodes only directories
//     on changed paths.
//   - Atomicity. Merge and the operations on it return a tree or a
//     *ConflictError; on conflict nothing is written. With
//     MergeOptions.KeepConflicts a conflicted merge returns the tree git
//     merge-tree --write-tree writes instead (markers in git's diff3 style
//     with MergeOptions.Diff3; differential test in keep_git_test.go) and
//     its conflicts. They never touch a ref: moving a branch or session
//     head is the caller's compare-and-swap.
//   - Rerere (rerere.go): a conflicted file's id and preimage as git
//     rerere computes them, and the replay of a remembered resolution.
//   - Overlays. Callers diff or merge an overlay by first building its
//     tree over the base (gitstore's builder) and passing tree ids; every
//     function accepts a commit id wherever it takes a tree.
//
// Concurrency: functions hold no state between calls and are safe for
// concurrent use on one gitstore.Repo; the types they return are plain
// values owned by the caller.
package merge
