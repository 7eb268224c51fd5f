package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/session"
)

// Changesets, reviews, accept, layers and undo; session rebase and merge.

// Changeset is a changeset on the wire. Reviews and Stats are filled by
// GET /v1/changesets/{id} and by the answers that change a changeset.
type Changeset struct {
	ID             string       `json:"id"`
	Session        string       `json:"session"`
	Repo           string       `json:"repo"`
	TargetBranch   string       `json:"target_branch"`
	Intent         string       `json:"intent"`
	Status         string       `json:"status"`
	Revision       int          `json:"revision"`
	AgentID        string       `json:"agent_id"`
	BaseCommit     string       `json:"base_commit"`
	HeadCommit     string       `json:"head_commit"`
	AcceptedCommit string       `json:"accepted_commit,omitempty"`
	ReadSet        []string     `json:"read_set"`
	Stats          *merge.Stats `json:"stats,omitempty"`
	Reviews        []Review     `json:"reviews,omitempty"`
	CreatedAt      time.Time    `json:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at"`
	// Symbols lists, per changed source file, the symbols added, modified
	// and removed (filled with Stats).
	Symbols []graph.FileSummary `json:"symbols,omitempty"`
	// Selection is what a partial accept took and left out.
	Selection *session.AcceptedSelection `json:"selection,omitempty"`
	// Approvals is how many authors approve the current revision (in
	// GET /v1/changesets).
	Approvals *int `json:"approvals,omitempty"`
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
	ID        string        `json:"id"`
	Verdict   string        `json:"verdict"`
	Body      string        `json:"body"`
	Author    string        `json:"author"`
	Revision  int           `json:"revision"`
	Comments  []LineComment `json:"comments"`
	CreatedAt time.Time     `json:"created_at"`
}

// LineComment is a review comment on a line of a file of the diff.
type LineComment struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Body string `json:"body"`
}

// SubmitRequest submits a session as a changeset.
type SubmitRequest struct {
	Intent       string `json:"intent,omitempty"`
	TargetBranch string `json:"target_branch,omitempty"`
}

// ReviewRequest records a review.
type ReviewRequest struct {
	Verdict  string        `json:"verdict"`
	Body     string        `json:"body,omitempty"`
	Author   string        `json:"author,omitempty"`
	Comments []LineComment `json:"comments,omitempty"`
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
	Select *merge.Selection `json:"select,omitempty"`
	// DryRun answers with the commit's diff and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Revision: the revision reviewed; 409 when the changeset was revised
	// since.
	Revision int `json:"revision,omitempty"`
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
	Selection *session.AcceptedSelection `json:"selection,omitempty"`
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
	Path     string               `json:"path"`
	Kind     string               `json:"kind"`
	GitPaths []string             `json:"git_paths,omitempty"`
	Base     *ConflictVersion     `json:"base"`
	Ours     *ConflictVersion     `json:"ours"`
	Theirs   *ConflictVersion     `json:"theirs"`
	Hunks    []merge.ConflictHunk `json:"hunks"`
	Binary   bool                 `json:"binary,omitempty"`
	Message  string               `json:"message"`
}

// ConflictVersion is one side's file in a conflict.
type ConflictVersion struct {
	Path string `json:"path"`
	OID  string `json:"oid"`
	Mode string `json:"mode"`
}

// RepoPolicy is a repository's accept policy.
type RepoPolicy struct {
	RequiredApprovals int  `json:"required_approvals"`
	AllowCheckedOut   bool `json:"allow_checked_out"`
	RefuseStaleReads  bool `json:"refuse_stale_reads"`
}

// RebaseRequest rebases a session onto a branch, tag or commit (its base
// branch when empty).
type RebaseRequest struct {
	Onto  string `json:"onto,omitempty"`
	Actor string `json:"actor,omitempty"`
}

// MergeRequest merges another session's changes into a session.
type MergeRequest struct {
	From  string `json:"from"`
	Actor string `json:"actor,omitempty"`
}

// MutationResult is a session after an operation and its mutation.
type MutationResult struct {
	Session  Session  `json:"session"`
	Mutation Mutation `json:"mutation"`
}

func toConflicts(cs []merge.Conflict) []Conflict {
	out := make([]Conflict, len(cs))
	v := func(x *merge.Version) *ConflictVersion {
		if x == nil {
			return nil
		}
		return &ConflictVersion{Path: x.Path, OID: oidText(x.OID), Mode: modeText(x.Mode)}
	}
	for i, c := range cs {
		out[i] = Conflict{Path: c.Path, Kind: string(c.Kind), GitPaths: c.GitPaths, Base: v(c.Base), Ours: v(c.Ours),
			Theirs: v(c.Theirs), Hunks: c.Hunks, Binary: c.Binary, Message: c.Message}
		if out[i].Hunks == nil {
			out[i].Hunks = []merge.ConflictHunk{}
		}
	}
	return out
}

func toStaleReads(rs []session.StaleRead) []StaleRead {
	out := make([]StaleRead, len(rs))
	for i, r := range rs {
		out[i] = StaleRead{Path: r.Path, Read: oidText(r.Read), Current: oidText(r.Current)}
	}
	return out
}

func toChangeset(c session.Changeset) Changeset {
	out := Changeset{
		ID: c.ID.String(), Session: c.Session.String(), Repo: c.Repo, TargetBranch: c.TargetBranch, Intent: c.Intent,
		Status: string(c.Status), Revision: c.Revision, AgentID: c.AgentID, BaseCommit: oidText(c.BaseCommit),
		HeadCommit: oidText(c.HeadCommit), AcceptedCommit: oidText(c.AcceptedCommit), ReadSet: []string{},
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Selection: c.Selection,
	}
	for p := range c.ReadSet {
		out.ReadSet = append(out.ReadSet, p)
	}
	slices.Sort(out.ReadSet)
	return out
}

func toReview(r session.Review) Review {
	out := Review{ID: r.ID.String(), Verdict: string(r.Verdict), Body: r.Body, Author: r.Author, Revision: r.Revision,
		Comments: []LineComment{}, CreatedAt: r.CreatedAt}
	for _, c := range r.Comments {
		out.Comments = append(out.Comments, LineComment(c))
	}
	return out
}

func toLayer(l session.Layer) Layer {
	out := Layer{ID: l.ID, Repo: l.Repo, Branch: l.Branch, Changeset: l.Changeset.String(), Commit: oidText(l.Commit),
		State: string(l.State), RevertCommit: oidText(l.RevertCommit), AcceptedAt: l.AcceptedAt}
	if !l.UndoneAt.IsZero() {
		t := l.UndoneAt
		out.UndoneAt = &t
	}
	return out
}

func toUndoResult(r session.UndoResult) UndoResult {
	out := UndoResult{Repo: r.Repo, Branch: r.Branch, DryRun: r.DryRun, Head: oidText(r.Head), Commit: oidText(r.Commit),
		Reverts: []Revert{}, ComesBack: r.ComesBack, Stays: r.Stays, Conflicts: toConflicts(r.Conflicts)}
	for _, rv := range r.Reverts {
		out.Reverts = append(out.Reverts, Revert{Changeset: rv.Changeset.String(), Layer: rv.Layer,
			LayerCommit: oidText(rv.LayerCommit), RevertCommit: oidText(rv.RevertCommit)})
	}
	if out.ComesBack == nil {
		out.ComesBack = []string{}
	}
	if out.Stays == nil {
		out.Stays = []string{}
	}
	return out
}

func changesetID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, newError(http.StatusNotFound, CodeNotFound, "no changeset %q", r.PathValue("id"))
	}
	return id, nil
}

// changesetView is a changeset with its stats and reviews.
func (s *Server) changesetView(r *http.Request, id uuid.UUID) (Changeset, error) {
	c, patch, err := s.m.ChangesetDiff(r.Context(), id)
	if err != nil {
		return Changeset{}, err
	}
	reviews, err := s.m.Reviews(r.Context(), id)
	if err != nil {
		return Changeset{}, err
	}
	out := toChangeset(c)
	out.Stats = &patch.Stats
	if out.Symbols, err = s.symbols(r.Context(), c); err != nil {
		return Changeset{}, err
	}
	out.Reviews = []Review{}
	for _, rv := range reviews {
		out.Reviews = append(out.Reviews, toReview(rv))
	}
	return out, nil
}

func (s *Server) submitChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req SubmitRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := s.m.Submit(ctxWithoutCancel(r), id, session.SubmitOptions{Intent: req.Intent, TargetBranch: req.TargetBranch})
	if err != nil {
		return err
	}
	out, err := s.changesetView(r, c.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listChangesets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := session.ChangesetFilter{Repo: q.Get("repo"), Status: session.ChangesetStatus(q.Get("status"))}
	if v := q.Get("session"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return badRequest("query session=%q: not a session id", v)
		}
		f.Session = id
	}
	switch f.Status {
	case "", session.ChangesetOpen, session.ChangesetApproved, session.ChangesetChangesRequested,
		session.ChangesetRejected, session.ChangesetAccepted, session.ChangesetUndone:
	default:
		return badRequest("query status=%q: not a changeset status", f.Status)
	}
	cs, err := s.m.ListChangesetListings(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]Changeset, len(cs))
	for i, c := range cs {
		out[i] = toChangeset(c.Changeset)
		out[i].Approvals = &cs[i].Approvals
	}
	writeJSON(w, http.StatusOK, map[string]any{"changesets": out})
	return nil
}

func (s *Server) getChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	out, err := s.changesetView(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// changesetDiff serves GET /v1/changesets/{id}/diff?format=unified|json:
// the frozen head against the base.
func (s *Server) changesetDiff(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "unified"
	}
	if format != "unified" && format != "json" {
		return badRequest("format %q: use unified or json", format)
	}
	rev, err := queryInt(r, "revision")
	if err != nil {
		return err
	}
	c, patch, err := s.m.ChangesetRevisionDiff(r.Context(), id, int(rev))
	if err != nil {
		return err
	}
	return writeDiff(w, format, c.BaseCommit, c.HeadCommit, patch)
}

// changesetRevisions serves GET /v1/changesets/{id}/revisions: every
// submission, oldest first.
func (s *Server) changesetRevisions(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	revs, err := s.m.ChangesetRevisions(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]Revision, len(revs))
	for i, rv := range revs {
		out[i] = Revision{Revision: rv.N, BaseCommit: oidText(rv.Base), HeadCommit: oidText(rv.Head), At: rv.At}
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": out})
	return nil
}

func (s *Server) reviewChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	var req ReviewRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := session.ReviewInput{Verdict: session.Verdict(req.Verdict), Body: req.Body, Author: req.Author}
	for _, c := range req.Comments {
		in.Comments = append(in.Comments, session.LineComment(c))
	}
	rv, _, err := s.m.Review(ctxWithoutCancel(r), id, in)
	if err != nil {
		return err
	}
	c, err := s.changesetView(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ReviewResult{Review: toReview(rv), Changeset: c})
	return nil
}

func (s *Server) acceptChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	var req AcceptRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	opts := session.AcceptOptions{Message: req.Message, Actor: req.Actor, RequireFreshReads: req.RequireFreshReads,
		Select: req.Select, DryRun: req.DryRun, Revision: req.Revision}
	opts.ExpectedHeadRev = req.ExpectedHead
	res, err := s.m.Accept(ctxWithoutCancel(r), id, opts)
	if err != nil {
		return err
	}
	out := AcceptResult{
		Commit: oidText(res.Commit), Branch: res.Branch, Rebased: res.Rebased, Recovered: res.Recovered,
		StaleReads: toStaleReads(res.StaleReads), Layer: toLayer(res.Layer), Changeset: toChangeset(res.Changeset),
		Selection: res.Selection, SessionRebased: res.SessionRebased, SessionError: res.SessionError,
		DryRun: res.DryRun, Head: oidText(res.Head),
	}
	if len(res.SessionConflicts) > 0 {
		out.SessionConflicts = toConflicts(res.SessionConflicts)
	}
	if res.Preview != nil {
		d := toDiff(res.Head, res.Head, res.Preview)
		d.To = ""
		out.Diff = &d
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) undo(w http.ResponseWriter, r *http.Request, ids []uuid.UUID, req UndoRequest) error {
	res, err := s.m.Undo(ctxWithoutCancel(r), session.UndoOptions{Changesets: ids, DryRun: req.DryRun, Actor: req.Actor})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUndoResult(res))
	return nil
}

func (s *Server) undoChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	var req UndoRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Changesets) > 0 {
		return badRequest("changesets: undo several at POST /v1/repos/{repo}/undo")
	}
	return s.undo(w, r, []uuid.UUID{id}, req)
}

func (s *Server) undoLayers(w http.ResponseWriter, r *http.Request) error {
	var req UndoRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Changesets) == 0 {
		return badRequest("changesets: name at least one")
	}
	repo := r.PathValue("repo")
	ids := make([]uuid.UUID, len(req.Changesets))
	for i, v := range req.Changesets {
		id, err := uuid.Parse(v)
		if err != nil {
			return badRequest("changesets[%d] %q: not a changeset id", i, v)
		}
		c, err := s.m.GetChangeset(r.Context(), id)
		if err != nil {
			return err
		}
		if c.Repo != repo {
			return badRequest("changeset %s is on repository %q, not %q", id, c.Repo, repo)
		}
		ids[i] = id
	}
	return s.undo(w, r, ids, req)
}

func (s *Server) layers(w http.ResponseWriter, r *http.Request) error {
	ls, err := s.m.Layers(r.Context(), r.PathValue("repo"), r.URL.Query().Get("branch"))
	if err != nil {
		return err
	}
	out := make([]Layer, len(ls))
	for i, l := range ls {
		out[i] = toLayer(l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"layers": out})
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := s.m.RepoPolicy(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RepoPolicy{RequiredApprovals: p.RequiredApprovals, AllowCheckedOut: p.AllowCheckedOut, RefuseStaleReads: p.RefuseStaleReads})
	return nil
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	var req RepoPolicy
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p, err := s.m.SetRepoPolicy(ctxWithoutCancel(r), session.RepoPolicy{Repo: r.PathValue("repo"),
		RequiredApprovals: req.RequiredApprovals, AllowCheckedOut: req.AllowCheckedOut, RefuseStaleReads: req.RefuseStaleReads})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RepoPolicy{RequiredApprovals: p.RequiredApprovals, AllowCheckedOut: p.AllowCheckedOut, RefuseStaleReads: p.RefuseStaleReads})
	return nil
}

func (s *Server) rebase(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req RebaseRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	ss, mu, err := s.m.Rebase(ctxWithoutCancel(r), id, req.Onto, req.Actor)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, MutationResult{Session: toSession(ss), Mutation: toMutation(mu)})
	return nil
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req MergeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	from, err := uuid.Parse(req.From)
	if err != nil {
		return badRequest("from %q: not a session id", req.From)
	}
	if aerr := s.auth.authorizeFrom(r, from); aerr != nil {
		return aerr
	}
	mu, err := s.m.MergeFrom(ctxWithoutCancel(r), id, from, req.Actor)
	if err != nil {
		return err
	}
	ss, err := s.m.Get(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, MutationResult{Session: toSession(ss), Mutation: toMutation(mu)})
	return nil
}

// symbols is the changeset's symbol summary: the files the session graph
// parses, with what changed in them.
func (s *Server) symbols(ctx context.Context, c session.Changeset) ([]graph.FileSummary, error) {
	if s.summaries == nil {
		return nil, nil
	}
	repo, err := s.m.GitRepo(ctx, c.Repo)
	if err != nil {
		return nil, err
	}
	sum, err := s.summaries.Summary(ctx, repo, c.BaseCommit, c.HeadCommit)
	if err != nil {
		return nil, err
	}
	out := []graph.FileSummary{}
	for _, f := range sum.Files {
		if f.Lang != "" {
			out = append(out, f)
		}
	}
	return out, nil
}
