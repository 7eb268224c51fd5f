package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) error {
	v, err := s.repos.Environment(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRepoEnvironment(v))
	return nil
}

func toRepoEnvironment(v repos.EnvironmentView) apitypes.RepoEnvironment {
	out := apitypes.RepoEnvironment{Env: v.Env, Secrets: v.Secrets}
	if v.Config != nil {
		out.EnvironmentConfig = *v.Config
	}
	return out
}

// putEnvironment sets a repository's environment. The answer names the
// secrets, never their values.
func (s *Server) putEnvironment(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.RepoEnvironmentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c := req.EnvironmentConfig
	u := repos.EnvironmentUpdate{Env: req.Env, Secrets: req.Secrets, Config: c,
		SetConfig: c.Setup != nil || c.Key != nil || c.Include != nil || c.Auto != nil}
	if req.File != nil {
		if u.SetConfig {
			return badRequest("give the configuration's fields or file, not both")
		}
		u.SetConfig, u.File = true, &repos.ConfigFile{Name: req.File.Name, Content: []byte(req.File.Content)}
	}
	v, err := s.repos.SetEnvironment(ctxWithoutCancel(r), r.PathValue("repo"), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toRepoEnvironment(v))
	return nil
}

// listEnvironments lists a repository's environment layers.
func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) error {
	if s.runner == nil {
		return session.ErrNoWorkdir
	}
	ls, err := s.runner.Environments(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	out := apitypes.EnvironmentLayers{Layers: make([]apitypes.EnvironmentLayer, 0, len(ls))}
	for _, l := range ls {
		out.Layers = append(out.Layers, apitypes.EnvironmentLayer{
			Key: l.Key, Commit: l.Commit, Status: l.Status, Bytes: l.Bytes, Files: l.Files, BuildMS: l.BuildMS,
			BuiltAt: l.BuiltAt, LastUsed: l.LastUsed, InUse: l.InUse, Log: l.Log, Error: l.Error,
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rebuildEnvironments forgets a repository's failed builds and drops its
// unused layers: the next command builds again.
func (s *Server) rebuildEnvironments(w http.ResponseWriter, r *http.Request) error {
	if s.runner == nil {
		return session.ErrNoWorkdir
	}
	n, err := s.runner.RebuildEnvironments(ctxWithoutCancel(r), r.PathValue("repo"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.EnvironmentRebuild{Dropped: n})
	return nil
}

// prepareEnvironment builds a new session's environment layer (create
// with prepare).
func (s *Server) prepareEnvironment(ctx context.Context, id uuid.UUID) (apitypes.ExecEnvironment, error) {
	if s.runner == nil {
		return apitypes.ExecEnvironment{}, session.ErrNoWorkdir
	}
	res, err := s.runner.PrepareEnvironment(ctx, id)
	if err != nil {
		return apitypes.ExecEnvironment{}, err
	}
	return toExecEnvironment(res), nil
}

func toExecEnvironment(e session.EnvironmentResult) apitypes.ExecEnvironment {
	return apitypes.ExecEnvironment{Key: e.Key, Status: e.Status, Source: e.Source, Built: e.Built, Log: e.Log, Error: e.Error, Problem: e.Problem}
}
