package apitypes

import "time"

// Changesets, reviews, accept, layers and undo; session rebase and merge.

// Changeset is a changeset on the wire. Reviews and Stats are filled by
// GET /v1/changesets/{id} and by the answers that change a changeset.
type Changeset struct {
	ID             string    `json:"id"`
	Session        string    `json:"session"`
	Repo           string    `json:"repo"`
	TargetBranch   string    `json:"target_branch"`
	Intent         string    `json:"intent"`
	Status         string    `json:"status"`
	Revision       int       `json:"revision"`
	AgentID        string    `json:"agent_id"`
	BaseCommit     string    `json:"base_commit"`
	HeadCommit     string    `json:"head_commit"`
	AcceptedCommit string    `json:"accepted_commit,omitempty"`
	ReadSet        []string  `json:"read_set"`
	Stats          *Stats    `json:"stats,omitempty"`
	Reviews        []Review  `json:"reviews,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Symbols lists, per changed source file, the symbols added, modified
	// and removed (filled with Stats).
	Symbols []FileSymbols `json:"symbols,omitempty"`
	// Selection is what a partial accept took and left out.
	Selection *AcceptedSelection `json:"selection,omitempty"`
	// Approvals is how many authors approve the current revision (in
	// GET /v1/changesets).
	Approvals *int `json:"approvals,omitempty"`
	// Checks sums up the checks of the current revision (in GET
	// /v1/changesets): failed, missing, stale, passed or none
	// (ChecksResponse.State).
	Checks string `json:"checks,omitempty"`
}

// Check is the newest run of one command (distinct argv) on a changeset
// revision, or a required check that never ran.
type Check struct {
	Argv []string `json:"argv"`
	// State is passed or failed (the run saw exactly the revision's
	// files), stale (files changed after the run), or missing (a
	// required check with no run).
	State    string `json:"state"`
	Required bool   `json:"required"`
	// The run; absent for a missing check.
	ExitCode   *int       `json:"exit_code,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	At         *time.Time `json:"at,omitempty"`
	// Seq is the session's latest mutation when the run finished.
	Seq int64 `json:"seq"`
	// ChangedFiles says the run itself changed files.
	ChangedFiles bool `json:"changed_files"`
	// OutputTail is the end of the output: the last 2 KiB of stdout,
	// then the last 2 KiB of stderr.
	OutputTail string `json:"output_tail"`
}

// Mergeability is GET /v1/changesets/{id}/mergeability: whether the
// current revision merges onto its target branch as it is now (the merge
// of an accept's dry run only, not its votes, checks or policies).
type Mergeability struct {
	Changeset string `json:"changeset"`
	Revision  int    `json:"revision"`
	Branch    string `json:"branch"`
	// BranchHead is the branch's commit the answer is for; empty when the
	// branch does not exist yet.
	BranchHead string `json:"branch_head"`
	// Rebased: the branch moved since the revision's base, so an accept
	// merges onto it.
	Rebased   bool       `json:"rebased"`
	Clean     bool       `json:"clean"`
	Conflicts []Conflict `json:"conflicts"`
}

// ChecksResponse is GET /v1/changesets/{id}/checks: the checks of one
// revision, newest run first, then the missing required ones.
type ChecksResponse struct {
	Changeset  string `json:"changeset"`
	Revision   int    `json:"revision"`
	HeadCommit string `json:"head_commit"`
	// State sums them up: failed when one failed, else missing, else
	// stale, else passed; none when there are none.
	State  string  `json:"state"`
	Checks []Check `json:"checks"`
}

// Revision is one submission of a changeset.
type Revision struct {
	Revision   int       `json:"revision"`
	BaseCommit string    `json:"base_commit"`
	HeadCommit string    `json:"head_commit"`
	At         time.Time `json:"at"`
}

// Review is one review of a changeset.
type Review struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Body    string `json:"body"`
	Author  string `json:"author"`
	// AuthorKind says who vouches for Author (AuthorReviewer, …); empty
	// for a review recorded before authors were vouched for.
	AuthorKind string        `json:"author_kind,omitempty"`
	Revision   int           `json:"revision"`
	Comments   []LineComment `json:"comments"`
	CreatedAt  time.Time     `json:"created_at"`
}

// LineComment is a review comment on a line of a file of the diff.
type LineComment struct {
	Path string `json:"path" sessiond:"path"`
	Line int    `json:"line"`
	Body string `json:"body"`
}

// SubmitRequest submits a session as a changeset.
type SubmitRequest struct {
	Intent       string `json:"intent,omitempty"`
	TargetBranch string `json:"target_branch,omitempty"`
}

// ReviewRequest records a review. Author is a name the admin token
// asserts, vouched by nothing: with an admin token configured such a
// review counts as a comment. A reviewer token's review is by the name the
// token carries, and on a daemon without an admin token every review is by
// its local user; Author is then ignored.
type ReviewRequest struct {
	Verdict  string        `json:"verdict"`
	Body     string        `json:"body,omitempty"`
	Author   string        `json:"author,omitempty"`
	Comments []LineComment `json:"comments,omitempty"`
}

// Kinds of review author (Review.AuthorKind): who vouches for the name.
const (
	AuthorReviewer = "reviewer" // a reviewer token the admin issued for this name
	AuthorLocal    = "local"    // the local user of a daemon without an admin token
	AuthorAsserted = "asserted" // a name the admin token gave; its review counts as a comment
	AuthorSession  = "session"  // the changeset's own session, whose reviews are comments
)

// ReviewerRequest asks for a reviewer token (POST /v1/reviewers).
type ReviewerRequest struct {
	Name string `json:"name"`
}

// Reviewer is a reviewer token and the name it carries.
type Reviewer struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// ReviewResult is a recorded review and the changeset after it.
type ReviewResult struct {
	Review    Review    `json:"review"`
	Changeset Changeset `json:"changeset"`
}

// AcceptRequest accepts a changeset onto its target branch.
type AcceptRequest struct {
	// ExpectedHead: the branch must be at this commit ("" is no check; a
	// 40-zero id means the branch must not exist).
	ExpectedHead      string `json:"expected_head,omitempty"`
	Message           string `json:"message,omitempty"`
	Actor             string `json:"actor,omitempty"`
	RequireFreshReads bool   `json:"require_fresh_reads,omitempty"`
	// Select accepts only these files and hunks (indexes into a file's
	// hunks in GET /v1/changesets/{id}/diff?format=json).
	Select *Selection `json:"select,omitempty"`
	// DryRun answers with the commit's diff and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Revision: the revision reviewed; 409 when the changeset was revised
	// since.
	Revision int `json:"revision,omitempty"`
}

// Selection names the files taken whole and, per file, the hunks taken
// (indexes into the file's hunks in the changeset's JSON diff).
type Selection struct {
	Files []string         `json:"files,omitempty" sessiond:"path"`
	Hunks map[string][]int `json:"hunks,omitempty" sessiond:"path"`
}

// AcceptedSelection is what a partial accept took and what it left out.
type AcceptedSelection struct {
	Taken   Selection `json:"taken"`
	LeftOut Selection `json:"left_out"`
}

// FileSymbols is the symbol summary of one changed source file: the
// symbols added, modified and removed, or why the file could not be
// parsed (the changes are then those of the last version that parsed).
type FileSymbols struct {
	Path       string      `json:"path"`
	Status     string      `json:"status"`
	Lang       string      `json:"lang,omitempty"`
	Added      []SymbolKey `json:"added,omitempty"`
	Modified   []SymbolKey `json:"modified,omitempty"`
	Removed    []SymbolKey `json:"removed,omitempty"`
	ParseError string      `json:"parse_error,omitempty"`
}

// SymbolKey names a symbol within one file: kind (func, method, type,
// const, var), a method's receiver type, and name.
type SymbolKey struct {
	Kind     string `json:"kind"`
	Receiver string `json:"receiver,omitempty"`
	Name     string `json:"name"`
}

// String is the key as a reader writes it: "func Parse", "method
// (Reader).Close", "type Limits".
func (k SymbolKey) String() string {
	if k.Kind == "method" {
		return "method (" + k.Receiver + ")." + k.Name
	}
	return k.Kind + " " + k.Name
}

// StaleRead is a file the session read that changed on the branch.
type StaleRead struct {
	Path    string `json:"path"`
	Read    string `json:"read"`
	Current string `json:"current"`
}

// AcceptResult is an accepted changeset.
type AcceptResult struct {
	Commit     string      `json:"commit"`
	Branch     string      `json:"branch"`
	Rebased    bool        `json:"rebased"`
	Recovered  bool        `json:"recovered,omitempty"`
	StaleReads []StaleRead `json:"stale_reads"`
	Layer      Layer       `json:"layer"`
	Changeset  Changeset   `json:"changeset"`
	// Selection is what a partial accept took and left out.
	Selection *AcceptedSelection `json:"selection,omitempty"`
	// SessionRebased: after a partial accept the session was moved onto
	// the commit, its diff now what was left out; SessionConflicts and
	// SessionError say why not.
	SessionRebased   bool       `json:"session_rebased,omitempty"`
	SessionConflicts []Conflict `json:"session_conflicts,omitempty"`
	SessionError     string     `json:"session_error,omitempty"`
	// DryRun: nothing was written; Head is the branch head the commit
	// would go on and Diff the commit's diff against it.
	DryRun bool   `json:"dry_run,omitempty"`
	Head   string `json:"head,omitempty"`
	Diff   *Diff  `json:"diff,omitempty"`
	// WorkTreeUpdated: the branch is the one the repository's work tree
	// has checked out, and its index and work tree were moved with it;
	// WorkTreeError says why they were not, after the branch moved.
	WorkTreeUpdated bool   `json:"work_tree_updated,omitempty"`
	WorkTreeError   string `json:"work_tree_error,omitempty"`
}

// Layer is an accepted changeset on a branch.
type Layer struct {
	ID           int64      `json:"id"`
	Repo         string     `json:"repo"`
	Branch       string     `json:"branch"`
	Changeset    string     `json:"changeset"`
	Commit       string     `json:"commit"`
	State        string     `json:"state"`
	RevertCommit string     `json:"revert_commit,omitempty"`
	AcceptedAt   time.Time  `json:"accepted_at"`
	UndoneAt     *time.Time `json:"undone_at,omitempty"`
}

// UndoRequest undoes one changeset (POST /v1/changesets/{id}/undo) or
// several of one branch (POST /v1/repos/{repo}/undo with Changesets).
type UndoRequest struct {
	Changesets []string `json:"changesets,omitempty"`
	DryRun     bool     `json:"dry_run,omitempty"`
	Actor      string   `json:"actor,omitempty"`
}

// UndoResult is what an undo did or, with dry_run, would do.
type UndoResult struct {
	Repo      string     `json:"repo"`
	Branch    string     `json:"branch"`
	DryRun    bool       `json:"dry_run"`
	Head      string     `json:"head"`
	Commit    string     `json:"commit,omitempty"`
	Reverts   []Revert   `json:"reverts"`
	ComesBack []string   `json:"comes_back"`
	Stays     []string   `json:"stays"`
	Conflicts []Conflict `json:"conflicts"`
	// WorkTreeUpdated and WorkTreeError: as in AcceptResult.
	WorkTreeUpdated bool   `json:"work_tree_updated,omitempty"`
	WorkTreeError   string `json:"work_tree_error,omitempty"`
}

// Revert is one undone layer.
type Revert struct {
	Changeset    string `json:"changeset"`
	Layer        int64  `json:"layer"`
	LayerCommit  string `json:"layer_commit"`
	RevertCommit string `json:"revert_commit,omitempty"`
}

// Conflict is one conflicted path of a merge, rebase, accept or undo.
type Conflict struct {
	Path     string           `json:"path"`
	Kind     string           `json:"kind"`
	GitPaths []string         `json:"git_paths,omitempty"`
	Base     *ConflictVersion `json:"base"`
	Ours     *ConflictVersion `json:"ours"`
	Theirs   *ConflictVersion `json:"theirs"`
	Hunks    []ConflictHunk   `json:"hunks"`
	Binary   bool             `json:"binary,omitempty"`
	Message  string           `json:"message"`
	// Rerere and OfferedResolution: a session's kept conflict
	// (conflicts.go).
	Rerere            string  `json:"rerere,omitempty"`
	OfferedResolution *string `json:"offered_resolution,omitempty"`
}

// ConflictHunk is a region of a file both sides changed differently:
// where it starts on each side (1-based lines) and each side's lines.
type ConflictHunk struct {
	BaseStart   int      `json:"base_start"`
	BaseLines   []string `json:"base_lines"`
	OursStart   int      `json:"ours_start"`
	OursLines   []string `json:"ours_lines"`
	TheirsStart int      `json:"theirs_start"`
	TheirsLines []string `json:"theirs_lines"`
}

// ConflictVersion is one side's file in a conflict.
type ConflictVersion struct {
	Path string `json:"path"`
	OID  string `json:"oid"`
	Mode string `json:"mode"`
}

// RepoPolicy is a repository's policy: how changesets are accepted, and
// what commands on its sessions may use. A PUT replaces the whole policy.
type RepoPolicy struct {
	RequiredApprovals int `json:"required_approvals"`
	// AllowCheckedOut: accepts and undos onto the branch a non-bare
	// repository has checked out go through and update its index and
	// work tree when those are clean (git's
	// receive.denyCurrentBranch=updateInstead), and are refused naming
	// what is not clean otherwise; false refuses them all. Absent in a
	// PUT: true, the default. An answer always has it.
	AllowCheckedOut  *bool       `json:"allow_checked_out,omitempty"`
	RefuseStaleReads bool        `json:"refuse_stale_reads"`
	Exec             *ExecPolicy `json:"exec,omitempty"`
	// RequiredChecks are commands (argv) whose newest run by the session
	// must have passed on exactly the files of the revision accepted;
	// otherwise accept is 409 checks_required. An answer always has it.
	RequiredChecks [][]string `json:"required_checks"`
}

// ExecPolicy is what commands on a repository's sessions may use: the
// host's network when they ask for it (where the daemon allows that at
// all), or the destinations of an allowlist through the daemon's egress
// proxy (network.go), and limits narrower than the daemon's (0: the
// daemon's).
type ExecPolicy struct {
	Network bool `json:"network"`
	// NetworkAllow, non-nil, is network's allowlist ({"allow": [...]}).
	NetworkAllow []string `json:"-"`
	MemoryBytes  int64    `json:"memory_bytes,omitempty"`
	Pids         int64    `json:"pids,omitempty"`
	CPUWeight    int64    `json:"cpu_weight,omitempty"`
	ScratchBytes int64    `json:"scratch_bytes,omitempty"`
	TmpBytes     int64    `json:"tmp_bytes,omitempty"`
	// ServiceIdleSeconds stops a session's services after this long
	// with no request through their ports and no command (0: 30 min).
	ServiceIdleSeconds int64 `json:"service_idle_seconds,omitempty"`
}

// RebaseRequest rebases a session onto a branch, tag or commit (its base
// branch when empty).
type RebaseRequest struct {
	Onto  string `json:"onto,omitempty"`
	Actor string `json:"actor,omitempty"`
	// Conflicts: "" or "refuse" (a conflict is a 409 and nothing
	// applies), "keep" or "reuse" (conflicts.go).
	Conflicts string `json:"conflicts,omitempty"`
}

// MergeRequest merges another session's changes into a session.
type MergeRequest struct {
	From      string `json:"from"`
	Actor     string `json:"actor,omitempty"`
	Conflicts string `json:"conflicts,omitempty"` // as in RebaseRequest
}

// FromTokenHeader carries the token of a second session an operation
// reads: a merge's "from". A session token reaches only its own session,
// so merging another session with one needs that session's token here
// too (or the admin token as the bearer).
const FromTokenHeader = "X-Sessiond-From-Token"

// MutationResult is a session after an operation and its mutation.
type MutationResult struct {
	Session  Session  `json:"session"`
	Mutation Mutation `json:"mutation"`
	// Conflicts and Reused: a rebase or merge with conflicts keep or
	// reuse (conflicts.go).
	Conflicts []Conflict `json:"conflicts,omitempty"`
	Reused    []string   `json:"reused,omitempty"`
}

// TimelineEntry is one thing that happened to a changeset (GET
// /v1/changesets/{id}/timeline): kind is checkpoint, revision, review,
// comment, accepted or undone.
type TimelineEntry struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Revision is the revision the entry belongs to (0: not known).
	Revision int `json:"revision,omitempty"`
	// Commit is a checkpoint's or a revision's commit, the commit an
	// accept wrote, or an undo's revert commit.
	Commit string `json:"commit,omitempty"`
	// Checkpoint, Label and Seq describe a checkpoint.
	Checkpoint int    `json:"checkpoint,omitempty"`
	Label      string `json:"label,omitempty"`
	Seq        int64  `json:"seq,omitempty"`
	// Review is set for a review and for each of its comments (without
	// its comments); Comment for a comment.
	Review  *Review      `json:"review,omitempty"`
	Comment *LineComment `json:"comment,omitempty"`
}

// Timeline is a changeset's history, oldest first.
type Timeline struct {
	Changeset string          `json:"changeset"`
	Session   string          `json:"session"`
	Repo      string          `json:"repo"`
	Entries   []TimelineEntry `json:"entries"`
}

// Run is one command a session ran (GET /v1/sessions/{id}/runs), whether
// it changed files or not.
type Run struct {
	ID         int64     `json:"id"`
	Argv       []string  `json:"argv"`
	ExitCode   int       `json:"exit_code"`
	DurationMS int64     `json:"duration_ms"`
	At         time.Time `json:"at"`
	// Seq is the session's latest mutation when the command finished.
	Seq          int64  `json:"seq"`
	ChangedFiles bool   `json:"changed_files"`
	OutputTail   string `json:"output_tail"`
}

// Runs lists a session's commands, oldest first.
type Runs struct {
	Runs []Run `json:"runs"`
}
