// Package client is the Go client of the sessiond HTTP API v1. The command
// line, the MCP server and the end-to-end tests use it. The wire types are
// those of package apitypes, so a program that uses the client links none
// of the engine.
//
// A Client is safe for concurrent use.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/apitypes"
)

// DefaultServer is the local daemon's address.
const DefaultServer = "http://127.0.0.1:7420"

// Client talks to one sessiond server.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the server at base (DefaultServer when empty)
// that sends token, if not empty, as a bearer token.
func New(base, token string) *Client {
	if base == "" {
		base = DefaultServer
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{}}
}

// WithToken returns a client of the same server with another token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// Error is an error answer of the API. Programs switch on Code.
type Error struct {
	Status  int
	Code    string
	Message string
	// Details holds the fields beside code and message (rule, path,
	// current, conflicts, …).
	Details map[string]any
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
}

// Code returns the API error code of err, or "" when err is not an API
// error.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Request, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send performs req and turns an error status into an *Error.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body apitypes.ErrorBody
	e := &Error{Status: resp.StatusCode, Code: apitypes.CodeInternal, Message: strings.TrimSpace(string(data))}
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		e.Code, e.Message, e.Details = body.Error.Code, body.Error.Message, body.Error.Details
	}
	return e
}

// do sends a JSON request (body may be nil) and decodes a JSON answer into
// out (which may be nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// EscapePath percent-encodes a repository path segment by segment, as the
// files route expects.
func EscapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func sessionPath(id string, rest ...string) string {
	p := "/v1/sessions/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Operations.

// Healthz reports whether the daemon is up.
func (c *Client) Healthz(ctx context.Context) error {
	return c.do(ctx, "GET", "/healthz", nil, nil, nil)
}

// Readyz reports whether the store and the repositories are reachable.
func (c *Client) Readyz(ctx context.Context) (apitypes.Health, error) {
	var h apitypes.Health
	err := c.do(ctx, "GET", "/readyz", nil, nil, &h)
	return h, err
}

// Repositories.

// CreateRepo registers an existing repository or, with Init, creates one.
func (c *Client) CreateRepo(ctx context.Context, req apitypes.CreateRepoRequest) (apitypes.Repo, error) {
	var r apitypes.Repo
	err := c.do(ctx, "POST", "/v1/repos", nil, req, &r)
	return r, err
}

// ListRepos lists the registered repositories.
func (c *Client) ListRepos(ctx context.Context) ([]apitypes.Repo, error) {
	var out struct {
		Repos []apitypes.Repo `json:"repos"`
	}
	err := c.do(ctx, "GET", "/v1/repos", nil, nil, &out)
	return out.Repos, err
}

// GetRepo returns one repository.
func (c *Client) GetRepo(ctx context.Context, name string) (apitypes.Repo, error) {
	var r apitypes.Repo
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(name), nil, nil, &r)
	return r, err
}

// Branches lists a repository's branches.
func (c *Client) Branches(ctx context.Context, repo string) ([]apitypes.Branch, error) {
	var out struct {
		Branches []apitypes.Branch `json:"branches"`
	}
	err := c.do(ctx, "GET", "/v1/repos/"+url.PathEscape(repo)+"/branches", nil, nil, &out)
	return out.Branches, err
}

// Sessions.

// CreateSession starts a session.
func (c *Client) CreateSession(ctx context.Context, req apitypes.CreateSessionRequest) (apitypes.Session, error) {
	var s apitypes.Session
	err := c.do(ctx, "POST", "/v1/sessions", nil, req, &s)
	return s, err
}

// SessionFilter selects sessions; empty fields match all.
type SessionFilter struct {
	Repo, State, AgentID string
	Limit                int
}

// ListSessions lists sessions.
func (c *Client) ListSessions(ctx context.Context, f SessionFilter) ([]apitypes.Session, error) {
	q := url.Values{}
	for k, v := range map[string]string{"repo": f.Repo, "state": f.State, "agent_id": f.AgentID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out apitypes.Sessions
	err := c.do(ctx, "GET", "/v1/sessions", q, nil, &out)
	return out.Sessions, err
}

// GetSession returns a session.
func (c *Client) GetSession(ctx context.Context, id string) (apitypes.Session, error) {
	var s apitypes.Session
	err := c.do(ctx, "GET", sessionPath(id), nil, nil, &s)
	return s, err
}

// AbandonSession ends a session.
func (c *Client) AbandonSession(ctx context.Context, id string) (apitypes.Session, error) {
	var s apitypes.Session
	err := c.do(ctx, "DELETE", sessionPath(id), nil, nil, &s)
	return s, err
}

// Fork starts a session from another's current view or checkpoint.
func (c *Client) Fork(ctx context.Context, id string, req apitypes.ForkRequest) (apitypes.Session, error) {
	var s apitypes.Session
	err := c.do(ctx, "POST", sessionPath(id, "fork"), nil, req, &s)
	return s, err
}

// Files.

// FileMeta is what the headers of a file answer say.
type FileMeta struct {
	OID    string // the blob id (the ETag without quotes)
	Source string // overlay or base
	Mode   string
	Type   string
	Status string
	Size   int64
	// Binary says the file is binary as git decides; a read (not a stat)
	// answers it.
	Binary bool
}

func metaOf(resp *http.Response) FileMeta {
	h := resp.Header
	return FileMeta{
		OID: strings.Trim(h.Get("ETag"), `"`), Source: h.Get("X-Sessiond-Source"), Mode: h.Get("X-Sessiond-Mode"),
		Type: h.Get("X-Sessiond-Type"), Status: h.Get("X-Sessiond-Status"), Size: resp.ContentLength,
		Binary: h.Get("X-Sessiond-Binary") == "true",
	}
}

// ReadFile returns a file's content.
func (c *Client) ReadFile(ctx context.Context, id, path string) ([]byte, FileMeta, error) {
	return c.ReadRange(ctx, id, path, "")
}

// ReadRange returns part of a file; rng is a Range header value such as
// "bytes=0-99" (empty for all of it).
func (c *Client) ReadRange(ctx context.Context, id, path, rng string) ([]byte, FileMeta, error) {
	req, err := c.newRequest(ctx, "GET", sessionPath(id, "files", EscapePath(path)), nil, nil)
	if err != nil {
		return nil, FileMeta{}, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, FileMeta{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return data, metaOf(resp), err
}

// StatFile describes a file or directory (a HEAD request).
func (c *Client) StatFile(ctx context.Context, id, path string) (FileMeta, error) {
	req, err := c.newRequest(ctx, "HEAD", sessionPath(id, "files", EscapePath(path)), nil, nil)
	if err != nil {
		return FileMeta{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return FileMeta{}, err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return FileMeta{}, &Error{Status: resp.StatusCode, Code: codeForStatus(resp.StatusCode), Message: resp.Status}
	}
	return metaOf(resp), nil
}

// codeForStatus guesses the code of a body-less (HEAD) error answer.
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return apitypes.CodeBadRequest
	case http.StatusUnauthorized:
		return apitypes.CodeUnauthorized
	case http.StatusForbidden:
		return apitypes.CodeForbidden
	case http.StatusNotFound:
		return apitypes.CodeNotFound
	case http.StatusMethodNotAllowed:
		return apitypes.CodeMethodNotAllowed
	case http.StatusConflict:
		return apitypes.CodeConflict
	case http.StatusPreconditionFailed:
		return apitypes.CodePreconditionFailed
	case http.StatusRequestEntityTooLarge:
		return apitypes.CodeTooLarge
	case http.StatusRequestedRangeNotSatisfiable:
		return apitypes.CodeRangeNotSatisfiable
	case http.StatusServiceUnavailable:
		return apitypes.CodeUnavailable
	case http.StatusInsufficientStorage:
		return apitypes.CodeInsufficientStorage
	}
	return apitypes.CodeInternal
}

// WriteOptions qualify a file write.
type WriteOptions struct {
	Mode        string // "100644", "100755", "120000"; empty keeps it
	IfMatch     string // blob id the file must be at
	IfNoneMatch bool   // create only
}

// WriteFile writes a file.
func (c *Client) WriteFile(ctx context.Context, id, path string, data []byte, opts WriteOptions) (apitypes.WriteResult, error) {
	req, err := c.newRequest(ctx, "PUT", sessionPath(id, "files", EscapePath(path)), nil, bytes.NewReader(data))
	if err != nil {
		return apitypes.WriteResult{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if opts.Mode != "" {
		req.Header.Set("X-Sessiond-Mode", opts.Mode)
	}
	if opts.IfMatch != "" {
		req.Header.Set("If-Match", `"`+opts.IfMatch+`"`)
	}
	if opts.IfNoneMatch {
		req.Header.Set("If-None-Match", "*")
	}
	resp, err := c.send(req)
	if err != nil {
		return apitypes.WriteResult{}, err
	}
	defer resp.Body.Close()
	var out apitypes.WriteResult
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out, err
}

// DeleteFile deletes a file, or with recursive a directory.
func (c *Client) DeleteFile(ctx context.Context, id, path string, recursive bool) (apitypes.WriteResult, error) {
	var q url.Values
	if recursive {
		q = url.Values{"recursive": {"true"}}
	}
	var out apitypes.WriteResult
	err := c.do(ctx, "DELETE", sessionPath(id, "files", EscapePath(path)), q, nil, &out)
	return out, err
}

// Edits applies a batch of edits atomically.
func (c *Client) Edits(ctx context.Context, id string, req apitypes.EditsRequest) (apitypes.EditsResult, error) {
	var out apitypes.EditsResult
	err := c.do(ctx, "POST", sessionPath(id, "edits"), nil, req, &out)
	return out, err
}

// TreeOptions select a listing.
type TreeOptions struct {
	Prefix       string
	Recursive    bool
	OnlyModified bool
	Glob         string
}

// Tree lists a session's files.
func (c *Client) Tree(ctx context.Context, id string, o TreeOptions) ([]apitypes.FileInfo, error) {
	q := url.Values{}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Recursive {
		q.Set("recursive", "true")
	}
	if o.OnlyModified {
		q.Set("only_modified", "true")
	}
	if o.Glob != "" {
		q.Set("glob", o.Glob)
	}
	var out apitypes.Tree
	err := c.do(ctx, "GET", sessionPath(id, "tree"), q, nil, &out)
	return out.Entries, err
}

// Summary counts a session's files and changes.
func (c *Client) Summary(ctx context.Context, id string) (apitypes.Summary, error) {
	var out apitypes.Summary
	err := c.do(ctx, "GET", sessionPath(id, "summary"), nil, nil, &out)
	return out, err
}

// Search finds lines matching an RE2 pattern.
func (c *Client) Search(ctx context.Context, id string, req apitypes.SearchRequest) (apitypes.SearchResult, error) {
	var out apitypes.SearchResult
	err := c.do(ctx, "POST", sessionPath(id, "search"), nil, req, &out)
	return out, err
}

// Mutations returns up to limit mutations after sequence number after.
func (c *Client) Mutations(ctx context.Context, id string, after int64, limit int) ([]apitypes.Mutation, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out apitypes.Mutations
	err := c.do(ctx, "GET", sessionPath(id, "mutations"), q, nil, &out)
	return out.Mutations, err
}

// Checkpoint commits the session's view.
func (c *Client) Checkpoint(ctx context.Context, id, label, message string) (apitypes.Checkpoint, error) {
	var out apitypes.Checkpoint
	err := c.do(ctx, "POST", sessionPath(id, "checkpoints"), nil, apitypes.CheckpointRequest{Label: label, Message: message}, &out)
	return out, err
}

// Checkpoints lists a session's checkpoints.
func (c *Client) Checkpoints(ctx context.Context, id string) ([]apitypes.Checkpoint, error) {
	var out apitypes.Checkpoints
	err := c.do(ctx, "GET", sessionPath(id, "checkpoints"), nil, nil, &out)
	return out.Checkpoints, err
}

// Rollback restores a checkpoint (its id, number or commit id).
func (c *Client) Rollback(ctx context.Context, id, checkpoint string) (apitypes.RollbackResult, error) {
	var out apitypes.RollbackResult
	err := c.do(ctx, "POST", sessionPath(id, "rollback"), nil, apitypes.RollbackRequest{Checkpoint: checkpoint}, &out)
	return out, err
}

// Events.

// SessionEvents streams a session's events after id after until ctx ends.
// The channel closes when the stream ends; resume with the last id seen.
func (c *Client) SessionEvents(ctx context.Context, id string, after int64) (<-chan apitypes.Event, error) {
	return c.events(ctx, sessionPath(id, "events"), after)
}

// RepoEvents streams a repository's events (all its sessions').
func (c *Client) RepoEvents(ctx context.Context, repo string, after int64) (<-chan apitypes.Event, error) {
	return c.events(ctx, "/v1/repos/"+url.PathEscape(repo)+"/events", after)
}

func (c *Client) events(ctx context.Context, path string, after int64) (<-chan apitypes.Event, error) {
	req, err := c.newRequest(ctx, "GET", path, nil, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	out := make(chan apitypes.Event)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var data []byte
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(data) > 0 {
					var e apitypes.Event
					if json.Unmarshal(data, &e) == nil {
						select {
						case out <- e:
						case <-ctx.Done():
							return
						}
					}
				}
				data = data[:0]
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			}
		}
	}()
	return out, nil
}

// WaitReady polls /healthz until the server answers or timeout passes.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.Healthz(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Diff returns a session's diff as unified text (git apply-able) against
// its base (against "" or "base") or a checkpoint.
func (c *Client) Diff(ctx context.Context, id, against string) ([]byte, error) {
	req, err := c.newRequest(ctx, "GET", sessionPath(id, "diff"), diffQuery(against, "unified"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// DiffJSON returns a session's diff per file, with hunks.
func (c *Client) DiffJSON(ctx context.Context, id, against string) (apitypes.Diff, error) {
	var out apitypes.Diff
	err := c.do(ctx, "GET", sessionPath(id, "diff"), diffQuery(against, "json"), nil, &out)
	return out, err
}

func diffQuery(against, format string) url.Values {
	q := url.Values{"format": {format}}
	if against != "" {
		q.Set("against", against)
	}
	return q
}

// EventList returns up to limit of a session's stored events after id
// after, without streaming (the events route with Accept:
// application/json), only those of the given types when any are given.
func (c *Client) EventList(ctx context.Context, id string, after int64, limit int, types ...string) ([]apitypes.Event, error) {
	q := url.Values{}
	if len(types) > 0 {
		q.Set("type", strings.Join(types, ","))
	}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	req, err := c.newRequest(ctx, "GET", sessionPath(id, "events"), q, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out apitypes.Events
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Events, err
}
