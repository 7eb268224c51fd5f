package api

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/session"
)

// Session rebase and merge, and the conflicts they keep (SPEC §14).

func toKeptConflicts(cs []session.KeptConflict) []apitypes.Conflict {
	plain := make([]merge.Conflict, len(cs))
	for i, c := range cs {
		plain[i] = c.Conflict
	}
	out := toConflicts(plain)
	for i, c := range cs {
		out[i].Rerere = c.Rerere
		if c.Offered != nil {
			s := string(c.Offered)
			out[i].OfferedResolution = &s
		}
	}
	return out
}

func toMoveResult(r session.MoveResult) apitypes.MutationResult {
	out := apitypes.MutationResult{Session: toSession(r.Session), Mutation: toMutation(r.Mutation), Reused: r.Reused}
	if len(r.Conflicts) > 0 {
		out.Conflicts = toKeptConflicts(r.Conflicts)
	}
	return out
}

func (s *Server) rebase(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.RebaseRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	mode, err := session.ParseConflictsMode(req.Conflicts)
	if err != nil {
		return err
	}
	res, err := s.m.RebaseWith(ctxWithoutCancel(r), id, req.Onto, req.Actor, mode)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMoveResult(res))
	return nil
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.MergeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	from, err := uuid.Parse(req.From)
	if err != nil {
		return badRequest("from %q: not a session id", req.From)
	}
	mode, err := session.ParseConflictsMode(req.Conflicts)
	if err != nil {
		return err
	}
	if aerr := s.auth.authorizeFrom(r, from); aerr != nil {
		return aerr
	}
	res, err := s.m.MergeFromWith(ctxWithoutCancel(r), id, from, req.Actor, mode)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMoveResult(res))
	return nil
}

func (s *Server) conflicts(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	cs, err := s.m.Conflicts(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.SessionConflicts{Conflicts: toKeptConflicts(cs)})
	return nil
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.ResolveRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	cs, err := s.m.Resolve(ctxWithoutCancel(r), id, req.Paths)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.SessionConflicts{Conflicts: toKeptConflicts(cs)})
	return nil
}
