// Package worktree owns a non-bare repository's index and work tree as
// an accept or undo meets them: whether they are clean against the
// checked-out branch's head, and moving them to the branch's new head
// the way git's push-to-checkout does (receive.denyCurrentBranch=
// updateInstead: update-index --refresh, diff-files and diff-index
// --cached must find nothing, then read-tree -u -m <old> <new>).
//
// Invariants:
//   - git's own lock: an Update holds $GIT_DIR/index.lock (created
//     exclusively, as git does) from Begin until Commit or Abort, so a
//     git command that would write the index meanwhile fails cleanly
//     ("index.lock: File exists") instead of racing; one found there is
//     ErrLocked and nothing is touched.
//   - Clean means what git status --porcelain shows nothing of, untracked
//     files aside: no entry of the index differs from the head's tree
//     (staged changes, conflicts, intent-to-add entries), and no tracked
//     file differs from its entry (content, executable bit, type, a file
//     deleted). Stat data decides first; a file whose stat data changed,
//     or that changed in the same instant the index was written (git's
//     racy case), is compared by content. Submodules are not looked into
//     (--ignore-submodules). Anything else is a *DirtyError naming every
//     path, and nothing is touched.
//   - Only the paths that changed between the two commits are written
//     (read-tree -u -m): a file or symlink is written beside its place
//     and renamed over it; a directory left empty is removed. An
//     untracked file (ignored or not) that a new file would overwrite,
//     or an untracked file in a directory a new file replaces, refuses
//     the update (a *DirtyError) before anything is written.
//   - The new index (the old one's entries and stat data, the changed
//     paths with the stat data of the files just written) waits in
//     index.lock until Commit renames it into place; Abort after Apply
//     writes the changed paths back as the old commit has them and
//     removes the lock, so the index and work tree are as before.
//   - What it cannot do as git would is refused with ErrUnsupported
//     before anything is written: a sparse checkout (skip-worktree
//     entries), a split or sparse index, content conversion on the paths
//     it would write (a filter such as git-lfs, ident,
//     working-tree-encoding, eol=crlf, core.autocrlf).
//   - A crash between Apply and Commit leaves index.lock behind, as a
//     killed git command does: git then refuses to run until it is
//     removed, and since the work tree was clean before, git reset --hard
//     brings index and work tree to the branch's head, whichever side of
//     the ref update the crash fell.
//
// Concurrency: an Update belongs to one goroutine; index.lock keeps out
// every other writer of the index, in this process or another.
package worktree
