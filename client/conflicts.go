package client

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/sessiond/sessiond/apitypes"
)

// RebaseWith is Rebase with a conflicts mode: "keep" moves the session
// even when it conflicts, leaving git's markers and recording the
// conflicts; "reuse" also applies remembered resolutions.
func (c *Client) RebaseWith(ctx context.Context, session, onto, conflicts string) (apitypes.MutationResult, error) {
	var out apitypes.MutationResult
	err := c.do(ctx, "POST", sessionPath(session, "rebase"), nil, apitypes.RebaseRequest{Onto: onto, Conflicts: conflicts}, &out)
	return out, err
}

// MergeWith is Merge with a conflicts mode, as RebaseWith; fromToken,
// when set, is session from's token (see MergeWithToken).
func (c *Client) MergeWith(ctx context.Context, session, from, fromToken, conflicts string) (apitypes.MutationResult, error) {
	var out apitypes.MutationResult
	data, err := json.Marshal(apitypes.MergeRequest{From: from, Conflicts: conflicts})
	if err != nil {
		return out, err
	}
	req, err := c.newRequest(ctx, "POST", sessionPath(session, "merge"), nil, bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	if fromToken != "" {
		req.Header.Set(apitypes.FromTokenHeader, fromToken)
	}
	resp, err := c.send(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// Conflicts lists a session's unresolved conflicts.
func (c *Client) Conflicts(ctx context.Context, session string) (apitypes.SessionConflicts, error) {
	var out apitypes.SessionConflicts
	err := c.do(ctx, "GET", sessionPath(session, "conflicts"), nil, nil, &out)
	return out, err
}

// Resolve marks a session's conflicts at paths resolved, their files as
// they are; it returns what remains.
func (c *Client) Resolve(ctx context.Context, session string, paths []string) (apitypes.SessionConflicts, error) {
	var out apitypes.SessionConflicts
	err := c.do(ctx, "POST", sessionPath(session, "resolve"), nil, apitypes.ResolveRequest{Paths: paths}, &out)
	return out, err
}
