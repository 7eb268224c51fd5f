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
