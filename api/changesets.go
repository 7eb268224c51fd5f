package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/repos"
)

// Changesets, reviews, accept, layers and undo; session rebase and merge.

func toConflicts(cs []merge.Conflict) []apitypes.Conflict {
	out := make([]apitypes.Conflict, len(cs))
	v := func(x *merge.Version) *apitypes.ConflictVersion {
		if x == nil {
			return nil
		}
		return &apitypes.ConflictVersion{Path: x.Path, OID: oidText(x.OID), Mode: modeText(x.Mode)}
	}
	for i, c := range cs {
		out[i] = apitypes.Conflict{Path: c.Path, Kind: string(c.Kind), GitPaths: c.GitPaths, Base: v(c.Base), Ours: v(c.Ours),
			Theirs: v(c.Theirs), Hunks: make([]apitypes.ConflictHunk, len(c.Hunks)), Binary: c.Binary, Message: c.Message}
		for j, h := range c.Hunks {
			out[i].Hunks[j] = apitypes.ConflictHunk(h)
		}
	}
	return out
}

func toAcceptedSelection(s *changeset.AcceptedSelection) *apitypes.AcceptedSelection {
	if s == nil {
		return nil
	}
	return &apitypes.AcceptedSelection{Taken: apitypes.Selection(s.Taken), LeftOut: apitypes.Selection(s.LeftOut)}
}

func toStaleReads(rs []changeset.StaleRead) []apitypes.StaleRead {
	out := make([]apitypes.StaleRead, len(rs))
	for i, r := range rs {
		out[i] = apitypes.StaleRead{Path: r.Path, Read: oidText(r.Read), Current: oidText(r.Current)}
	}
	return out
}

func toChangeset(c changeset.Changeset) apitypes.Changeset {
	out := apitypes.Changeset{
		ID: c.ID.String(), Session: c.Session.String(), Repo: c.Repo, TargetBranch: c.TargetBranch, Intent: c.Intent,
		Status: string(c.Status), Revision: c.Revision, AgentID: c.AgentID, BaseCommit: oidText(c.BaseCommit),
		HeadCommit: oidText(c.HeadCommit), AcceptedCommit: oidText(c.AcceptedCommit), ReadSet: []string{},
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Selection: toAcceptedSelection(c.Selection),
	}
	for p := range c.ReadSet {
		out.ReadSet = append(out.ReadSet, p)
	}
	slices.Sort(out.ReadSet)
	return out
}

func toReview(r changeset.Review) apitypes.Review {
	out := apitypes.Review{ID: r.ID.String(), Verdict: string(r.Verdict), Body: r.Body, Author: r.Author, AuthorKind: string(r.AuthorKind),
		Revision: r.Revision, Comments: []apitypes.LineComment{}, CreatedAt: r.CreatedAt}
	for _, c := range r.Comments {
		out.Comments = append(out.Comments, apitypes.LineComment(c))
	}
	return out
}

func toLayer(l changeset.Layer) apitypes.Layer {
	out := apitypes.Layer{ID: l.ID, Repo: l.Repo, Branch: l.Branch, Changeset: l.Changeset.String(), Commit: oidText(l.Commit),
		State: string(l.State), RevertCommit: oidText(l.RevertCommit), AcceptedAt: l.AcceptedAt}
	if !l.UndoneAt.IsZero() {
		t := l.UndoneAt
		out.UndoneAt = &t
	}
	return out
}

func toUndoResult(r changeset.UndoResult) apitypes.UndoResult {
	out := apitypes.UndoResult{Repo: r.Repo, Branch: r.Branch, DryRun: r.DryRun, Head: oidText(r.Head), Commit: oidText(r.Commit),
		Reverts: []apitypes.Revert{}, ComesBack: r.ComesBack, Stays: r.Stays, Conflicts: toConflicts(r.Conflicts),
		WorkTreeUpdated: r.WorkTreeUpdated, WorkTreeError: r.WorkTreeError}
	for _, rv := range r.Reverts {
		out.Reverts = append(out.Reverts, apitypes.Revert{Changeset: rv.Changeset.String(), Layer: rv.Layer,
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
		return uuid.Nil, newError(http.StatusNotFound, apitypes.CodeNotFound, "no changeset %q", r.PathValue("id"))
	}
	return id, nil
}

// toChangesetView is a changeset as a reviewer sees it, on the wire: its
// stats, reviews and the symbols the engine found changed.
func toChangesetView(v changeset.View) apitypes.Changeset {
	out := toChangeset(v.Changeset)
	stats := apitypes.Stats(v.Stats)
	out.Stats = &stats
	if v.Symbols != nil {
		out.Symbols = make([]apitypes.FileSymbols, len(v.Symbols))
		for i, f := range v.Symbols {
			out.Symbols[i] = toFileSymbols(f)
		}
	}
	out.Reviews = []apitypes.Review{}
	for _, rv := range v.Reviews {
		out.Reviews = append(out.Reviews, toReview(rv))
	}
	return out
}

func (s *Server) submitChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.SubmitRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	v, err := s.cs.Submit(ctxWithoutCancel(r), id, changeset.SubmitOptions{Intent: req.Intent, TargetBranch: req.TargetBranch})
	if err != nil {
		return err
	}
	out := toChangesetView(v)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listChangesets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := changeset.Filter{Repo: q.Get("repo")}
	if v := q.Get("session"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return badRequest("query session=%q: not a session id", v)
		}
		f.Session = id
	}
	if v := q.Get("status"); v != "" {
		st, err := changeset.ParseStatus(v)
		if err != nil {
			return badRequest("query status=%q: not a changeset status", v)
		}
		f.Status = st
	}
	cs, err := s.cs.Listings(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]apitypes.Changeset, len(cs))
	for i, c := range cs {
		out[i] = toChangeset(c.Changeset)
		out[i].Approvals = &cs[i].Approvals
		out[i].Checks = string(c.Checks)
	}
	writeJSON(w, http.StatusOK, map[string]any{"changesets": out})
	return nil
}

func (s *Server) getChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	v, err := s.cs.View(r.Context(), id)
	if err != nil {
		return err
	}
	out := toChangesetView(v)
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
	c, patch, err := s.cs.RevisionDiff(r.Context(), id, int(rev))
	if err != nil {
		return err
	}
	return writeDiff(w, r, format, c.BaseCommit, c.HeadCommit, patch)
}

// changesetLines serves GET /v1/changesets/{id}/files/{path}?lines=a-b
// &side=base|head&revision=N: lines of a file the revision changes, at
// its base or head (head by default), as JSON.
func (s *Server) changesetLines(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	rev, err := queryInt(r, "revision")
	if err != nil {
		return err
	}
	from, to, err := queryLines(r)
	if err != nil {
		return err
	}
	side := r.URL.Query().Get("side")
	if side == "" {
		side = string(changeset.SideHead)
	}
	if side != string(changeset.SideBase) && side != string(changeset.SideHead) {
		return badRequest("query side=%q: use base or head", side)
	}
	fl, err := s.cs.RevisionLines(r.Context(), id, int(rev), changeset.Side(side), r.PathValue("path"), from, to)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.FileLines{Revision: fl.Revision, Side: string(fl.Side), Path: fl.Path, OID: oidText(fl.OID),
		Start: fl.Start, End: fl.End, Total: fl.Total, Lines: fl.Lines, Spans: toSpans(fl.Spans)})
	return nil
}

// maxLines bounds one ?lines= range.
const maxLines = 10000

// queryLines reads ?lines=a-b (1-based, inclusive, a <= b, at most
// maxLines lines): required.
func queryLines(r *http.Request) (int, int, error) {
	v := r.URL.Query().Get("lines")
	a, b, ok := strings.Cut(v, "-")
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if v == "" || !ok || err1 != nil || err2 != nil || from < 1 || to < from {
		return 0, 0, badRequest("query lines=%q: want a-b, line numbers from 1 with a <= b", v)
	}
	if to-from+1 > maxLines {
		return 0, 0, badRequest("query lines=%q: at most %d lines at a time", v, maxLines)
	}
	return from, to, nil
}

// changesetChecks serves GET /v1/changesets/{id}/checks: the commands
// the session ran on a revision (?revision=N, the current one by
// default), newest per distinct argv, and the required ones missing.
func (s *Server) changesetChecks(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	rev, err := queryInt(r, "revision")
	if err != nil {
		return err
	}
	cs, err := s.cs.Checks(r.Context(), id, int(rev))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toChecks(cs))
	return nil
}

func toChecks(cs changeset.Checks) apitypes.ChecksResponse {
	out := apitypes.ChecksResponse{Changeset: cs.Changeset.String(), Revision: cs.Revision, HeadCommit: oidText(cs.Head),
		State: string(cs.State()), Checks: make([]apitypes.Check, len(cs.Checks))}
	for i, c := range cs.Checks {
		out.Checks[i] = toCheck(c)
	}
	return out
}

func toCheck(c changeset.Check) apitypes.Check {
	ch := apitypes.Check{Argv: c.Argv, State: string(c.State), Required: c.Required}
	if c.State != changeset.CheckMissing {
		code, at := c.ExitCode, c.At
		ch.ExitCode, ch.At = &code, &at
		ch.DurationMS, ch.Seq, ch.ChangedFiles, ch.OutputTail = c.Duration.Milliseconds(), c.Seq, c.Changed, c.OutputTail
	}
	return ch
}

// changesetMergeability serves GET /v1/changesets/{id}/mergeability.
func (s *Server) changesetMergeability(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	m, err := s.cs.Mergeability(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Mergeability{Changeset: m.Changeset.String(), Revision: m.Revision, Branch: m.Branch,
		BranchHead: oidText(m.BranchHead), Rebased: m.Rebased, Clean: m.Clean, Conflicts: toConflicts(m.Conflicts)})
	return nil
}

// changesetRevisions serves GET /v1/changesets/{id}/revisions: every
// submission, oldest first.
func (s *Server) changesetRevisions(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	revs, err := s.cs.Revisions(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]apitypes.Revision, len(revs))
	for i, rv := range revs {
		out[i] = apitypes.Revision{Revision: rv.N, BaseCommit: oidText(rv.Base), HeadCommit: oidText(rv.Head), At: rv.At}
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": out})
	return nil
}

// sessionRuns serves GET /v1/sessions/{id}/runs.
func (s *Server) sessionRuns(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	runs, err := s.cs.Runs(r.Context(), id)
	if err != nil {
		return err
	}
	out := apitypes.Runs{Runs: make([]apitypes.Run, len(runs))}
	for i, rn := range runs {
		out.Runs[i] = apitypes.Run{ID: rn.ID, Argv: rn.Argv, ExitCode: rn.ExitCode, DurationMS: rn.Duration.Milliseconds(), At: rn.At,
			Seq: rn.Seq, ChangedFiles: rn.Changed, OutputTail: rn.OutputTail}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) changesetTimeline(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	tl, err := s.cs.Timeline(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTimeline(tl))
	return nil
}

func toTimeline(tl changeset.Timeline) apitypes.Timeline {
	out := apitypes.Timeline{Changeset: tl.Changeset.String(), Session: tl.Session.String(), Repo: tl.Repo,
		Entries: make([]apitypes.TimelineEntry, len(tl.Entries))}
	for i, e := range tl.Entries {
		en := apitypes.TimelineEntry{Kind: string(e.Kind), At: e.At, Revision: e.Revision, Commit: oidText(e.Commit),
			Checkpoint: e.Checkpoint, Label: e.Label, Seq: e.Seq}
		if e.Review != nil {
			rv := toReview(*e.Review)
			if e.Kind == changeset.EntryComment {
				rv.Comments = nil // the comment is its own entry
			}
			en.Review = &rv
		}
		if e.Comment != nil {
			c := apitypes.LineComment(*e.Comment)
			en.Comment = &c
		}
		out.Entries[i] = en
	}
	return out
}

func (s *Server) reviewChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	var req apitypes.ReviewRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := changeset.ReviewInput{Verdict: changeset.Verdict(req.Verdict), Body: req.Body,
		Reviewer: s.auth.reviewerOf(principalFrom(r.Context()), req.Author)}
	for _, c := range req.Comments {
		in.Comments = append(in.Comments, changeset.LineComment(c))
	}
	rv, v, err := s.cs.Review(ctxWithoutCancel(r), id, in)
	if err != nil {
		return err
	}
	c := toChangesetView(v)
	writeJSON(w, http.StatusCreated, apitypes.ReviewResult{Review: toReview(rv), Changeset: c})
	return nil
}

// createReviewer serves POST /v1/reviewers: the token of the reviewer
// named in the body. Tokens are derived from the name (auth.go), so
// issuing one stores nothing and issuing it again gives the same token.
func (s *Server) createReviewer(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.ReviewerRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if !s.auth.enabled {
		return badRequest("this daemon has no admin token: it has one identity, its local user %q, whose reviews count once; reviewer tokens need --admin-token", s.auth.localUser)
	}
	if err := identityNameError(req.Name); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.Reviewer{Name: req.Name, Token: s.auth.reviewerToken(req.Name)})
	return nil
}

func (s *Server) acceptChangeset(w http.ResponseWriter, r *http.Request) error {
	id, err := changesetID(r)
	if err != nil {
		return err
	}
	var req apitypes.AcceptRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	opts := changeset.AcceptOptions{Message: req.Message, Actor: req.Actor, RequireFreshReads: req.RequireFreshReads,
		Select: (*merge.Selection)(req.Select), DryRun: req.DryRun, Revision: req.Revision}
	opts.ExpectedHeadRev = req.ExpectedHead
	res, err := s.cs.Accept(ctxWithoutCancel(r), id, opts)
	if err != nil {
		return err
	}
	out := apitypes.AcceptResult{
		Commit: oidText(res.Commit), Branch: res.Branch, Rebased: res.Rebased, Recovered: res.Recovered,
		StaleReads: toStaleReads(res.StaleReads), Layer: toLayer(res.Layer), Changeset: toChangeset(res.Changeset),
		Selection: toAcceptedSelection(res.Selection), SessionRebased: res.SessionRebased, SessionError: res.SessionError,
		DryRun: res.DryRun, Head: oidText(res.Head), WorkTreeUpdated: res.WorkTreeUpdated, WorkTreeError: res.WorkTreeError,
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

func (s *Server) undo(w http.ResponseWriter, r *http.Request, repo string, ids []uuid.UUID, req apitypes.UndoRequest) error {
	res, err := s.cs.Undo(ctxWithoutCancel(r), changeset.UndoOptions{Repo: repo, Changesets: ids, DryRun: req.DryRun, Actor: req.Actor})
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
	var req apitypes.UndoRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Changesets) > 0 {
		return badRequest("changesets: undo several at POST /v1/repos/{repo}/undo")
	}
	return s.undo(w, r, "", []uuid.UUID{id}, req)
}

func (s *Server) undoLayers(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.UndoRequest
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
		ids[i] = id
	}
	return s.undo(w, r, repo, ids, req)
}

func (s *Server) layers(w http.ResponseWriter, r *http.Request) error {
	ls, err := s.cs.Layers(r.Context(), r.PathValue("repo"), r.URL.Query().Get("branch"))
	if err != nil {
		return err
	}
	out := make([]apitypes.Layer, len(ls))
	for i, l := range ls {
		out[i] = toLayer(l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"layers": out})
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := s.repos.Policy(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRepoPolicy(p))
	return nil
}

func toRepoPolicy(p repos.Policy) apitypes.RepoPolicy {
	ex := apitypes.ExecPolicy(p.Exec)
	allow := !p.RefuseCheckedOut
	req := p.RequiredChecks
	if req == nil {
		req = [][]string{}
	}
	return apitypes.RepoPolicy{RequiredApprovals: p.RequiredApprovals, AllowCheckedOut: &allow, RefuseStaleReads: p.RefuseStaleReads, Exec: &ex, RequiredChecks: req}
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.RepoPolicy
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p := repos.Policy{Repo: r.PathValue("repo"),
		RequiredApprovals: req.RequiredApprovals, RefuseCheckedOut: req.AllowCheckedOut != nil && !*req.AllowCheckedOut,
		RefuseStaleReads: req.RefuseStaleReads, RequiredChecks: req.RequiredChecks}
	if req.Exec != nil {
		p.Exec = repos.ExecPolicy(*req.Exec)
	}
	p, err := s.repos.SetPolicy(ctxWithoutCancel(r), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRepoPolicy(p))
	return nil
}

func toFileSymbols(f graph.FileSummary) apitypes.FileSymbols {
	keys := func(ks []graph.Key) []apitypes.SymbolKey {
		if ks == nil {
			return nil
		}
		out := make([]apitypes.SymbolKey, len(ks))
		for i, k := range ks {
			out[i] = apitypes.SymbolKey{Kind: string(k.Kind), Receiver: k.Receiver, Name: k.Name}
		}
		return out
	}
	return apitypes.FileSymbols{Path: f.Path, Status: f.Status, Lang: f.Lang, Added: keys(f.Added),
		Modified: keys(f.Modified), Removed: keys(f.Removed), ParseError: f.ParseError}
}
