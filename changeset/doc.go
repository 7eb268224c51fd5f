// Package changeset owns the reviewable unit and its life: changesets and
// their revisions, reviews and line comments, the vote rules, accept
// (commit-on-accept with compare-and-swap, whole or selected hunks),
// stale reads, the layers of a branch and their undo, the runs of
// commands and the checks they make of a revision, the lines of a file a
// revision changes at either side (RevisionLines, what a reviewer
// expands around a hunk, with package highlight's tokens), and the view a
// reviewer sees (its stats, reviews and symbol summary, composed here
// once for every route that shows it, from the Summarizer it is handed:
// the session graph). It works over gitstore and merge, a Store of its own
// (package db implements it; one conformance suite for both databases),
// the registry of repositories (package repos: the repositories and their
// accept policies), the event log (package events) and the session engine
// as Sessions declares it (session.Manager); it does not import package
// session.
//
// The rules, in one place:
//
//   - Votes (review.go): a review is by a Reviewer the caller's credentials
//     establish (package api decides which). Only identities the daemon
//     vouches for vote: a reviewer token's name, or the local user of a
//     daemon without an admin token; a name the admin token merely asserts
//     is recorded as a comment whatever its verdict, and the changeset's
//     own session may only comment (its vote, and any review by another
//     session, is ErrForbidden). The status follows each identity's latest
//     vote on the current revision (ReviewStatus): one approval per
//     identity.
//   - Target branch (submit.go, targetBranch): a branch name or
//     refs/heads/<name> by git branch's rules, which git's name
//     resolution takes to that branch or to nothing yet; HEAD, other refs,
//     tags, remote-tracking branches and object ids are ErrInvalid naming
//     target_branch and the value. Accept checks the stored name again.
//   - Submit checkpoints the session and freezes that checkpoint commit as
//     the changeset's head. The session may go on writing (submitted
//     sessions accept writes); what is under review does not change until
//     the session is submitted again, which revises the same changeset:
//     a new head, Revision+1, status back to open. Reviews stay, each
//     recording the revision it looked at; the status follows the reviews
//     of the current revision only (ReviewStatus). The stats of the
//     revision's diff are kept with it, so a view renders no patch.
//   - Accept writes one commit on the target branch and moves the branch by
//     compare-and-swap (git's <ref>.lock). The order is: the commit is
//     durable, then the store records the accept in flight (the commit and
//     the revision, Changeset.Accepting, by compare-and-swap on the
//     revision), then the ref moves, then the store records the changeset
//     accepted, its layer, the session accepted and the events, and
//     clears the flight, in one transaction. While an accept is in flight
//     the changeset is not revised and not accepted again. Undo takes the
//     same steps with each layer's revert commit (Layer.Reverting).
//   - The branch a non-bare repository has checked out (accept.go,
//     checkedOut): an accept or undo onto it moves the index and work
//     tree too, as git's receive.denyCurrentBranch=updateInstead, through
//     package worktree: after the commit is written and before the
//     accept is recorded in flight, the update takes git's index.lock,
//     checks the checkout clean (a *worktree.DirtyError names what is
//     not; then nothing is written and the branch does not move) and
//     writes the changed paths; the ref's compare-and-swap then decides:
//     moved, the new index replaces the old; not moved, the files are
//     written back and the index left as it was. The policy's
//     RefuseCheckedOut refuses that branch instead (record.ErrForbidden).
//   - All or nothing across a crash: Reconcile, at the daemon's start, and
//     every Accept, Undo and Submit first for its branch, settles what is
//     in flight by looking for the recorded commit on the branch: there,
//     the accept or undo is recorded now (Recovered); not there, the
//     flight is forgotten and the changeset is as before. A submit after
//     an accept that landed finds the session accepted. An accept that
//     finds no flight recognises its work on the branch (a writer that
//     kept no record) only by a commit carrying its Sessiond-Changeset and
//     Sessiond-Revision trailers and the tree it makes on that commit's
//     parent; an undo only by the layer's Sessiond-Undo trailer, the
//     commit it reverts and the revert's tree. The changeset's id alone
//     never identifies a commit.
//   - A partial accept (AcceptOptions.Select) commits the base with only
//     the selected files and hunks of the changeset's diff (hunks by their
//     index in that diff, which is the same on every read of a revision),
//     merged onto a moved branch as any accept. The changeset is accepted
//     and records what was taken and left out; the session is not closed
//     but moved onto the new commit (its view unchanged when the branch
//     had not moved, otherwise rebased by merge; a conflict there leaves
//     it on its old base and is reported), so what was left out is its
//     diff, to revise and submit as a new changeset, or abandon.
//   - Checks (checks.go): every command a session runs is kept as a Run
//     (the command runner hands it over through internal/checkruns), with
//     the session's latest mutation when it finished (Run.Seq). The checks
//     of a revision are the newest run of each distinct argv up to the
//     seq of the checkpoint the revision's head is: passed or failed when
//     the run's seq is that seq, stale when it is older (files changed
//     after the run); a later run belongs to a later revision. A
//     repository's Policy.RequiredChecks that never ran are missing, and
//     an accept (dry runs too) is refused with a *ChecksRequiredError
//     unless each required check passed on the revision accepted.
//     Runs lists a session's runs whole, for its page.
//   - The timeline (timeline.go) is a changeset's history composed from
//     its session's event log and its reviews, in the log's order: each
//     revision after the checkpoints taken since the previous one (or
//     since another changeset of the session was submitted), reviews each
//     followed by its line comments, the accept and the undo.
//   - Mergeability (mergeability.go) is the merge an accept would do,
//     onto the branch as it is now, and nothing else (not the votes,
//     checks or policies); its answers are cached by the objects they
//     come from (base, head, branch head), which never change.
//   - A changeset and its session change in one store transaction: the
//     session is held under its lock (record.Held) while the transaction
//     runs, and its state in memory follows only once it committed.
//
// Concurrency: a Service is safe for concurrent use. In this process
// accepts and undos on one branch are serialized by a lock per branch
// (Service.mu guards the map of those locks), so concurrent accepts land
// one after the other; against other writers (the git CLI, another
// sessiond) the compare-and-swap decides, and a lost race re-merges on the
// new head (a few times), or fails with a conflict when the caller gave an
// expected head.
package changeset
