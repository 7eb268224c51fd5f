package api

import (
	"net/http"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/repos"
)

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) error {
	v, err := s.repos.Environment(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.RepoEnvironment{Env: v.Env, Secrets: v.Secrets})
	return nil
}

// putEnvironment sets a repository's environment. The answer names the
// secrets, never their values.
func (s *Server) putEnvironment(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.RepoEnvironmentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	v, err := s.repos.SetEnvironment(ctxWithoutCancel(r), r.PathValue("repo"), repos.EnvironmentUpdate{Env: req.Env, Secrets: req.Secrets})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.RepoEnvironment{Env: v.Env, Secrets: v.Secrets})
	return nil
}
