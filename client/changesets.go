package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sessiond/sessiond/apitypes"
)

// Changesets, reviews, accept, layers and undo; session rebase and merge.

func changesetPath(id string, rest ...string) string {
	p := "/v1/changesets/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// ChangesetFilter selects changesets; zero fields match everything.
type ChangesetFilter struct {
	Repo, Status, Session string
}

// Submit submits a session as a changeset (or revises its open one).
func (c *Client) Submit(ctx context.Context, session string, req apitypes.SubmitRequest) (apitypes.Changeset, error) {
	var out apitypes.Changeset
	err := c.do(ctx, "POST", sessionPath(session, "changesets"), nil, req, &out)
	return out, err
}

// ListChangesets lists changesets, oldest first.
func (c *Client) ListChangesets(ctx context.Context, f ChangesetFilter) ([]apitypes.Changeset, error) {
	q := url.Values{}
	for k, v := range map[string]string{"repo": f.Repo, "status": f.Status, "session": f.Session} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out struct {
		Changesets []apitypes.Changeset `json:"changesets"`
	}
	err := c.do(ctx, "GET", "/v1/changesets", q, nil, &out)
	return out.Changesets, err
}

// GetChangeset returns a changeset with its stats and reviews.
func (c *Client) GetChangeset(ctx context.Context, id string) (apitypes.Changeset, error) {
	var out apitypes.Changeset
	err := c.do(ctx, "GET", changesetPath(id), nil, nil, &out)
	return out, err
}

// Checks returns the checks of a changeset's revision (0: the current
// one): the commands its session ran, newest per distinct argv.
func (c *Client) Checks(ctx context.Context, id string, revision int) (apitypes.ChecksResponse, error) {
	var q url.Values
	if revision != 0 {
		q = url.Values{"revision": {strconv.Itoa(revision)}}
	}
	var out apitypes.ChecksResponse
	err := c.do(ctx, "GET", changesetPath(id, "checks"), q, nil, &out)
	return out, err
}

// Runs returns the commands a session ran, oldest first.
func (c *Client) Runs(ctx context.Context, session string) ([]apitypes.Run, error) {
	var out apitypes.Runs
	err := c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(session)+"/runs", nil, nil, &out)
	return out.Runs, err
}

// Timeline returns a changeset's history, oldest first.
func (c *Client) Timeline(ctx context.Context, id string) (apitypes.Timeline, error) {
	var out apitypes.Timeline
	err := c.do(ctx, "GET", changesetPath(id, "timeline"), nil, nil, &out)
	return out, err
}

// ChangesetDiff returns the unified diff under review.
func (c *Client) ChangesetDiff(ctx context.Context, id string) ([]byte, error) {
	req, err := c.newRequest(ctx, "GET", changesetPath(id, "diff"), url.Values{"format": {"unified"}}, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, decodeError(resp)
	}
	return io.ReadAll(resp.Body)
}

// ChangesetDiffJSON returns the diff under review in its JSON form.
func (c *Client) ChangesetDiffJSON(ctx context.Context, id string) (apitypes.Diff, error) {
	var out apitypes.Diff
	err := c.do(ctx, "GET", changesetPath(id, "diff"), url.Values{"format": {"json"}}, nil, &out)
	return out, err
}

// ChangesetLines reads lines a-b (1-based, inclusive) of a file the
// changeset's revision changes, at its "base" or "head" ("" is head);
// revision 0 is the current one.
func (c *Client) ChangesetLines(ctx context.Context, id string, revision int, side, path string, a, b int) (apitypes.FileLines, error) {
	q := url.Values{"lines": {fmt.Sprintf("%d-%d", a, b)}}
	if side != "" {
		q.Set("side", side)
	}
	if revision != 0 {
		q.Set("revision", strconv.Itoa(revision))
	}
	var out apitypes.FileLines
	err := c.do(ctx, "GET", changesetPath(id, "files", EscapePath(path)), q, nil, &out)
	return out, err
}

// Review records a review.
func (c *Client) Review(ctx context.Context, id string, req apitypes.ReviewRequest) (apitypes.ReviewResult, error) {
	var out apitypes.ReviewResult
	err := c.do(ctx, "POST", changesetPath(id, "reviews"), nil, req, &out)
	return out, err
}

// CreateReviewer issues the reviewer token of the reviewer called name
// (admin token only): reviews made with it are by that name.
func (c *Client) CreateReviewer(ctx context.Context, name string) (apitypes.Reviewer, error) {
	var out apitypes.Reviewer
	err := c.do(ctx, "POST", "/v1/reviewers", nil, apitypes.ReviewerRequest{Name: name}, &out)
	return out, err
}

// Accept accepts a changeset onto its target branch.
func (c *Client) Accept(ctx context.Context, id string, req apitypes.AcceptRequest) (apitypes.AcceptResult, error) {
	var out apitypes.AcceptResult
	err := c.do(ctx, "POST", changesetPath(id, "accept"), nil, req, &out)
	return out, err
}

// Undo undoes one changeset's layer (or previews it with DryRun).
func (c *Client) Undo(ctx context.Context, id string, req apitypes.UndoRequest) (apitypes.UndoResult, error) {
	var out apitypes.UndoResult
	err := c.do(ctx, "POST", changesetPath(id, "undo"), nil, req, &out)
	return out, err
}

// UndoLayers undoes several layers of one branch of repo at once.
func (c *Client) UndoLayers(ctx context.Context, repo string, req apitypes.UndoRequest) (apitypes.UndoResult, error) {
	var out apitypes.UndoResult
	err := c.do(ctx, "POST", "/v1/repos/"+url.PathEscape(repo)+"/undo", nil, req, &out)
	return out, err
}

// Layers lists the accepted changesets of a branch, newest first.
func (c *Client) Layers(ctx context.Context, repo, branch string) ([]apitypes.Layer, error) {
	var q url.Values
	if branch != "" {
		q = url.Values{"branch": {branch}}
	}
	var out struct {
		Layers []apitypes.Layer `json:"layers"`
	}
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(repo)+"/layers", q, nil, &out)
	return out.Layers, err
}

// RepoPolicy returns a repository's accept policy.
func (c *Client) RepoPolicy(ctx context.Context, repo string) (apitypes.RepoPolicy, error) {
	var out apitypes.RepoPolicy
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(repo)+"/policy", nil, nil, &out)
	return out, err
}

// SetRepoPolicy sets a repository's accept policy.
func (c *Client) SetRepoPolicy(ctx context.Context, repo string, p apitypes.RepoPolicy) (apitypes.RepoPolicy, error) {
	var out apitypes.RepoPolicy
	err := c.do(ctx, "PUT", "/v1/repos/"+url.PathEscape(repo)+"/policy", nil, p, &out)
	return out, err
}

// Rebase moves a session onto a new base (its base branch when onto is
// empty).
func (c *Client) Rebase(ctx context.Context, session, onto string) (apitypes.MutationResult, error) {
	var out apitypes.MutationResult
	err := c.do(ctx, "POST", sessionPath(session, "rebase"), nil, apitypes.RebaseRequest{Onto: onto}, &out)
	return out, err
}

// Merge merges session from's changes into session.
func (c *Client) Merge(ctx context.Context, session, from string) (apitypes.MutationResult, error) {
	var out apitypes.MutationResult
	err := c.do(ctx, "POST", sessionPath(session, "merge"), nil, apitypes.MergeRequest{From: from}, &out)
	return out, err
}

// MergeWithToken is Merge for a caller holding session tokens rather than
// the admin token: fromToken is the token of session from, which a
// session token alone does not reach.
func (c *Client) MergeWithToken(ctx context.Context, session, from, fromToken string) (apitypes.MutationResult, error) {
	var out apitypes.MutationResult
	data, err := json.Marshal(apitypes.MergeRequest{From: from})
	if err != nil {
		return out, err
	}
	req, err := c.newRequest(ctx, "POST", sessionPath(session, "merge"), nil, bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(apitypes.FromTokenHeader, fromToken)
	resp, err := c.send(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	return out, json.NewDecoder(resp.Body).Decode(&out)
}
