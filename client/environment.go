package client

import (
	"context"
	"net/url"

	"github.com/sessiond/sessiond/apitypes"
)

// RepoEnvironment returns a repository's plain variables and the names of
// its secrets.
func (c *Client) RepoEnvironment(ctx context.Context, repo string) (apitypes.RepoEnvironment, error) {
	var out apitypes.RepoEnvironment
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(repo)+"/environment", nil, nil, &out)
	return out, err
}

// SetRepoEnvironment changes a repository's environment.
func (c *Client) SetRepoEnvironment(ctx context.Context, repo string, req apitypes.RepoEnvironmentRequest) (apitypes.RepoEnvironment, error) {
	var out apitypes.RepoEnvironment
	err := c.do(ctx, "PUT", "/v1/repos/"+url.PathEscape(repo)+"/environment", nil, req, &out)
	return out, err
}

// Environments lists a repository's environment layers.
func (c *Client) Environments(ctx context.Context, repo string) (apitypes.EnvironmentLayers, error) {
	var out apitypes.EnvironmentLayers
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(repo)+"/environments", nil, nil, &out)
	return out, err
}

// RebuildEnvironments forgets a repository's failed environment builds
// and drops its unused layers: the next command builds again.
func (c *Client) RebuildEnvironments(ctx context.Context, repo string) (apitypes.EnvironmentRebuild, error) {
	var out apitypes.EnvironmentRebuild
	err := c.do(ctx, "POST", "/v1/repos/"+url.PathEscape(repo)+"/environments/rebuild", nil, struct{}{}, &out)
	return out, err
}
