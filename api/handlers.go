package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// Operations.

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.Health{Status: "ok"})
	return nil
}

// readyz checks that the store answers and every registered repository
// opens. Probes need no token, so without the admin token's (none when
// auth is off) the answer names no repository: the store and the
// repositories as a whole, ok or unreachable.
// It is also not ready while something a write found full is still full
// (checkSpace).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	p, aerr := s.auth.authenticate(r)
	detail := aerr == nil && p.admin
	h := apitypes.Health{Status: "ok", Checks: map[string]string{}}
	probes, err := s.repos.Probe(ctx)
	if err != nil {
		h.Status = "unavailable"
		h.Checks["store"] = "unreachable"
		s.log.Warn("readyz: store", "error", err)
	} else {
		h.Checks["store"] = "ok"
		h.Checks["repos"] = "ok"
	}
	for _, rp := range probes {
		check := "ok"
		if rp.Err != nil {
			h.Status, check, h.Checks["repos"] = "unavailable", "unreachable", "unreachable"
			s.log.Warn("readyz: repository", "repo", rp.Name, "error", rp.Err)
		}
		if detail {
			h.Checks["repo:"+rp.Name] = check
		}
	}
	if !s.checkSpace(ctx, h.Checks) {
		h.Status = "unavailable"
	}
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
	return nil
}

// Repositories.

func (s *Server) createRepo(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.CreateRepoRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var (
		rp  repos.Repo
		err error
	)
	switch given := btoi(req.Init) + btoi(req.Path != "") + btoi(req.Origin != ""); {
	case given > 1:
		return badRequest("give one of path, origin and init")
	case req.Init:
		rp, err = s.repos.Init(ctxWithoutCancel(r), req.Name)
	case req.Origin != "":
		rp, err = s.repos.RegisterOrigin(ctxWithoutCancel(r), req.Name, req.Origin)
	case req.Path != "":
		rp, err = s.repos.Register(ctxWithoutCancel(r), req.Name, req.Path)
	default:
		return badRequest("give the path of an existing repository, the origin URL of one at a git remote, or init: true")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toRepo(rp))
	return nil
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.repos.List(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Repos []apitypes.Repo `json:"repos"`
	}{Repos: []apitypes.Repo{}}
	for _, rp := range rs {
		out.Repos = append(out.Repos, toRepo(rp))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) error {
	rp, err := s.repos.Get(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRepo(rp))
	return nil
}

func (s *Server) branches(w http.ResponseWriter, r *http.Request) error {
	refs, err := s.repos.Branches(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	out := struct {
		Branches []apitypes.Branch `json:"branches"`
	}{Branches: []apitypes.Branch{}}
	for _, ref := range refs {
		name := string(ref.Name)
		if len(name) > len("refs/heads/") {
			name = name[len("refs/heads/"):]
		}
		out.Branches = append(out.Branches, apitypes.Branch{Name: name, Commit: oidText(ref.OID)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Sessions.

func sessionID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, newError(http.StatusNotFound, apitypes.CodeNotFound, "no session %q", r.PathValue("id"))
	}
	return id, nil
}

func parseMode(m string) (session.Mode, error) {
	switch session.Mode(m) {
	case "", session.ModeReadWrite, session.ModeReadOnly:
		return session.Mode(m), nil
	}
	return "", badRequest("mode %q: use read_write or read_only", m)
}

// withToken adds the session's scoped token when auth is on.
func (s *Server) withToken(ss session.Session) apitypes.Session {
	out := toSession(ss)
	if s.auth.enabled {
		out.Token = s.auth.sessionToken(ss.ID)
	}
	return out
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.CreateSessionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Repo == "" {
		return badRequest("repo is required")
	}
	mode, err := parseMode(req.Mode)
	if err != nil {
		return err
	}
	if req.TTLSeconds < 0 {
		return badRequest("ttl_seconds must not be negative")
	}
	opts := session.CreateOptions{
		Repo: req.Repo, Base: req.Base, AgentID: req.AgentID, AgentName: req.AgentName, Intent: req.Intent,
		Mode: mode, TTL: time.Duration(req.TTLSeconds) * time.Second, Caches: req.Caches, Env: req.Env,
	}
	if req.Policy != nil {
		opts.Policy = fromPolicy(*req.Policy)
	}
	ss, err := s.m.Create(ctxWithoutCancel(r), opts)
	if err != nil {
		return err
	}
	out := s.withToken(ss)
	if req.Prepare {
		env, err := s.prepareEnvironment(r.Context(), ss.ID)
		if err != nil {
			return err
		}
		out.Environment = &env
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	state := session.State(q.Get("state"))
	switch state {
	case "", session.StateActive, session.StateSubmitted, session.StateAccepted, session.StateRejected,
		session.StateAbandoned, session.StateExpired:
	default:
		return badRequest("query state=%q: not a session state (active, submitted, accepted, rejected, abandoned, expired)", state)
	}
	ss, err := s.m.ListSessions(r.Context(), session.SessionFilter{
		Repo: q.Get("repo"), State: state, AgentID: q.Get("agent_id"), Limit: int(limit),
	})
	if err != nil {
		return err
	}
	out := apitypes.Sessions{Sessions: []apitypes.Session{}}
	for _, x := range ss {
		out.Sessions = append(out.Sessions, toSession(x))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ss, err := s.m.Get(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSession(ss))
	return nil
}

func (s *Server) abandonSession(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ss, err := s.m.Abandon(ctxWithoutCancel(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSession(ss))
	return nil
}

func (s *Server) edits(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.EditsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	edits := make([]session.Edit, len(req.Edits))
	var written int64
	for i, e := range req.Edits {
		switch {
		case e.Op == string(session.OpWrite) && !e.HasContent():
			return badRequest("edit %d: write needs \"content\" (\"\" for an empty file)", i)
		case e.Op == string(session.OpAppend) && !e.HasContent():
			return badRequest("edit %d: append needs \"content\"", i)
		}
		se := session.Edit{Op: session.Op(e.Op), Path: e.Path, To: e.To, Content: e.Content, Recursive: e.Recursive,
			Glob: e.Glob, Old: e.Old, New: e.New, Count: e.Count, Overwrite: e.Overwrite}
		if e.Mode != "" {
			m, err := parseFileMode(e.Mode)
			if err != nil {
				return err
			}
			se.Mode = m
		}
		if e.IfMatch != "" {
			oid, err := gitstore.ParseOID(e.IfMatch)
			if err != nil {
				return badRequest("edit %d: if_match %q is not an object id", i, e.IfMatch)
			}
			se.IfMatch = &oid
		}
		written += int64(len(e.Content))
		edits[i] = se
	}
	res, err := s.m.Edits(ctxWithoutCancel(r), id, edits, req.DryRun, "")
	if err != nil {
		return err
	}
	if !req.DryRun {
		s.metrics.overlayBytes.Add(float64(written))
	}
	out := apitypes.EditsResult{DryRun: res.DryRun, Seq: res.Seq, Results: toEditResults(res.Results), Changes: []apitypes.FileChange{}}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, apitypes.FileChange{Path: c.Path, Old: oidText(c.Old), New: oidText(c.New)})
	}
	if req.Diff {
		patch, err := res.Patch(r.Context())
		if err != nil {
			return err
		}
		out.Diff = string(patch.Unified())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		return err
	}
	onlyModified, err := queryBool(r, "only_modified")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	infos, err := s.m.ListFiles(r.Context(), id, session.ListOptions{
		Prefix: dirPrefix(q.Get("prefix")), Recursive: recursive, OnlyModified: onlyModified, Glob: q.Get("glob"),
	})
	if err != nil {
		return err
	}
	out := apitypes.Tree{Entries: make([]apitypes.FileInfo, 0, len(infos))}
	for _, fi := range infos {
		out.Entries = append(out.Entries, toFileInfo(fi))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// dirPrefix is the directory a listing or a search is below; it may be
// written with one trailing slash ("src/" is "src", "/" the root), as a
// shell completes it.
func dirPrefix(p string) string { return strings.TrimSuffix(p, "/") }

func (s *Server) summary(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	sum, err := s.m.TreeSummary(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Summary(sum))
	return nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.SearchRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := s.m.Search(r.Context(), id, session.SearchOptions{
		Pattern: req.Pattern, Glob: req.Glob, Prefix: dirPrefix(req.Prefix), CaseInsensitive: req.CaseInsensitive, MaxResults: req.MaxResults,
		Context: req.Context,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSearchResult(res))
	return nil
}

func (s *Server) mutations(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	after, limit, err := queryPage(r, 1000, 10_000)
	if err != nil {
		return err
	}
	ms, err := s.m.Mutations(r.Context(), id, after, limit)
	if err != nil {
		return err
	}
	out := apitypes.Mutations{Mutations: make([]apitypes.Mutation, 0, len(ms))}
	for _, m := range ms {
		out.Mutations = append(out.Mutations, toMutation(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.CheckpointRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	start := time.Now()
	cp, err := s.m.Checkpoint(ctxWithoutCancel(r), id, req.Label, req.Message)
	if err != nil {
		return err
	}
	s.metrics.checkpoint.Observe(time.Since(start).Seconds())
	writeJSON(w, http.StatusCreated, toCheckpoint(cp))
	return nil
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	cps, err := s.m.Checkpoints(r.Context(), id)
	if err != nil {
		return err
	}
	out := apitypes.Checkpoints{Checkpoints: make([]apitypes.Checkpoint, 0, len(cps))}
	for _, c := range cps {
		out.Checkpoints = append(out.Checkpoints, toCheckpoint(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.RollbackRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Checkpoint == "" {
		return badRequest("checkpoint is required")
	}
	cp, mu, err := s.m.Rollback(ctxWithoutCancel(r), id, req.Checkpoint, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.RollbackResult{Checkpoint: toCheckpoint(cp), Mutation: toMutation(mu)})
	return nil
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.ForkRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	mode, err := parseMode(req.Mode)
	if err != nil {
		return err
	}
	var policy *session.Policy
	if req.Policy != nil {
		p := fromPolicy(*req.Policy)
		policy = &p
	}
	ss, err := s.m.Fork(ctxWithoutCancel(r), id, session.ForkOptions{
		AgentID: req.AgentID, AgentName: req.AgentName, Intent: req.Intent, Checkpoint: req.Checkpoint,
		Mode: mode, Policy: policy,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.withToken(ss))
	return nil
}

// parseFileMode accepts the modes a client may write.
func parseFileMode(text string) (gitstore.Mode, error) {
	m, err := gitstore.ParseMode(text)
	if err != nil || !m.Writable() {
		return 0, &apitypes.Error{Status: http.StatusBadRequest, Code: apitypes.CodeInvalidPath,
			Message: "mode " + text + ": only 100644, 100755 and 120000 may be written",
			Details: map[string]any{"rule": "badFilemode"}}
	}
	return m, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
