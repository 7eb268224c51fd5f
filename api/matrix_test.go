package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// world is what one call of the auth matrix runs against, built fresh for
// each call so that what one call changes cannot hide what another does.
//
//   - p has no policy; it wrote data/p.txt and a/p.txt.
//   - a, the session under test, is a fork of p with the policy
//     matrixPolicy: it inherits data/p.txt, which it may not read. It
//     wrote a/mine.txt and has checkpoint 1, and is submitted as
//     changeset aCS (which therefore carries a path a may not write).
//   - b is another session, whose token is "another session's token".
//   - c wrote a/c.txt (a merge a may take); d wrote data/d.txt (one it
//     may not).
//   - q has a's policy and wrote a/q.txt; its changeset qCS is open, or
//     accepted when the route needs a layer to undo.
type world struct {
	p, a, b, c, d, q session.Session
	aCS, qCS         changeset.View
}

var matrixPolicy = session.Policy{Write: []string{"a/**", "src/**"}, Deny: []string{"data/**"}}

func (e *scopeEnv) newWorld(accepted bool) *world {
	e.t.Helper()
	ctx := e.t.Context()
	m := e.m
	create := func(pol session.Policy) session.Session {
		s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "agent", Policy: pol})
		require.NoError(e.t, err)
		return s
	}
	write := func(s session.Session, p, content string) {
		_, _, err := m.Write(ctx, s.ID, p, []byte(content), session.WriteOptions{})
		require.NoError(e.t, err)
	}
	w := &world{}
	w.p = create(session.Policy{})
	write(w.p, "data/p.txt", "p-secret\n")
	write(w.p, "a/p.txt", "p\n")
	var err error
	w.a, err = m.Fork(ctx, w.p.ID, session.ForkOptions{AgentID: "agent-a", Policy: &matrixPolicy})
	require.NoError(e.t, err)
	write(w.a, "a/mine.txt", "mine\n")
	_, err = m.Checkpoint(ctx, w.a.ID, "one", "")
	require.NoError(e.t, err)
	w.b = create(session.Policy{})
	w.c = create(session.Policy{})
	write(w.c, "a/c.txt", "c\n")
	w.d = create(session.Policy{})
	write(w.d, "data/d.txt", "d\n")
	w.q = create(matrixPolicy)
	// Unique content: an accept in an earlier world put a/q.txt on main.
	write(w.q, "a/q.txt", "q of "+w.q.ID.String()+"\n")
	w.aCS, err = e.cs.Submit(ctx, w.a.ID, changeset.SubmitOptions{})
	require.NoError(e.t, err)
	w.qCS, err = e.cs.Submit(ctx, w.q.ID, changeset.SubmitOptions{})
	require.NoError(e.t, err)
	if accepted {
		_, err = e.cs.Accept(ctx, w.qCS.ID, changeset.AcceptOptions{})
		require.NoError(e.t, err)
	}
	// Load every session now: a first load pins the session's view in a
	// ref, which must not count as a change made by a refused call.
	for _, s := range []session.Session{w.p, w.a, w.b, w.c, w.d, w.q} {
		_, _, err := m.Tree(ctx, s.ID)
		require.NoError(e.t, err)
	}
	return w
}

// fingerprint is everything a refused call must leave as it was: every
// ref of the repository, every session (state, sequence, head, view),
// every changeset, the repositories, the accept policy and the
// environment.
func (e *scopeEnv) fingerprint() string {
	e.t.Helper()
	ctx := e.t.Context()
	var b strings.Builder
	ss, err := e.m.ListSessions(ctx, session.SessionFilter{})
	require.NoError(e.t, err)
	sort.Slice(ss, func(i, j int) bool { return ss[i].ID.String() < ss[j].ID.String() })
	// Trees first: loading a session the first time pins its view in a
	// ref, before the refs are listed.
	trees := make([]string, len(ss))
	for i, s := range ss {
		tree, _, err := e.m.Tree(ctx, s.ID)
		require.NoError(e.t, err)
		trees[i] = tree.String()
	}
	b.WriteString(testrepo.Git(e.t, e.repo, "for-each-ref", "--format=%(refname) %(objectname)"))
	for i, s := range ss {
		pol, err := json.Marshal(s.Policy)
		require.NoError(e.t, err)
		fmt.Fprintf(&b, "\nsession %s %s seq=%d head=%s cps=%d tree=%s policy=%s", s.ID, s.State, s.Seq, s.Head, s.Checkpoints, trees[i], pol)
	}
	cs, err := e.cs.List(ctx, changeset.Filter{})
	require.NoError(e.t, err)
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID.String() < cs[j].ID.String() })
	for _, c := range cs {
		fmt.Fprintf(&b, "\nchangeset %s %s head=%s", c.ID, c.Status, c.HeadCommit)
	}
	rs, err := e.en.Repos.List(ctx)
	require.NoError(e.t, err)
	for _, r := range rs {
		fmt.Fprintf(&b, "\nrepo %s", r.Name)
	}
	pol, err := e.en.Repos.Policy(ctx, "r")
	require.NoError(e.t, err)
	fmt.Fprintf(&b, "\npolicy %+v", pol)
	env, err := e.en.Repos.Environment(ctx, "r")
	require.NoError(e.t, err)
	fmt.Fprintf(&b, "\nenvironment %+v", env)
	return b.String()
}

// call is one request of the matrix.
type call struct {
	variant string // "allowed" or "denied" (a path the policy refuses or hides)
	path    func(w *world) string
	body    func(w *world) any
	// header adds headers; who is the principal making the call.
	header func(w *world, who string) []string
	// status is the answer for a caller the route admits: the admin, and
	// a's own token on a's session routes.
	status int
	// accepted builds the world with q's changeset accepted.
	accepted bool
	// stream: the answer is an event stream; only its status is read.
	stream bool
	// hides, on a success, is text the answer must not contain: what the
	// policy hides from a.
	hides []string
	// check runs after a success, with the body.
	check func(t *testing.T, e *scopeEnv, w *world, body []byte)
}

func sess(rest string) func(w *world) string {
	return func(w *world) string { return "/v1/sessions/" + w.a.ID.String() + rest }
}

func fixed(p string) func(w *world) string { return func(*world) string { return p } }

func jsonBody(v any) func(w *world) any { return func(*world) any { return v } }

// matrix lists, per route (method and pattern as in Routes), the calls
// made with each principal. A route missing from it fails the test.
func matrix() map[string][]call {
	hidden := []string{"data/p.txt", "p-secret"}
	file := func(p string) func(w *world) string { return sess("/files/" + p) }
	return map[string][]call{
		"GET /healthz":                  {{variant: "allowed", path: fixed("/healthz"), status: 200}},
		"GET /readyz":                   {{variant: "allowed", path: fixed("/readyz"), status: 200}},
		"GET /metrics":                  {{variant: "allowed", path: fixed("/metrics"), status: 200}},
		"POST /v1/repos":                {{variant: "allowed", path: fixed("/v1/repos"), body: jsonBody(map[string]any{"name": "another", "init": true}), status: 201}},
		"GET /v1/repos":                 {{variant: "allowed", path: fixed("/v1/repos"), status: 200}},
		"GET /v1/repos/{repo}":          {{variant: "allowed", path: fixed("/v1/repos/r"), status: 200}},
		"GET /v1/repos/{repo}/branches": {{variant: "allowed", path: fixed("/v1/repos/r/branches"), status: 200}},
		"GET /v1/repos/{repo}/events":   {{variant: "allowed", path: fixed("/v1/repos/r/events"), status: 200, stream: true}},
		"POST /v1/sessions":             {{variant: "allowed", path: fixed("/v1/sessions"), body: jsonBody(map[string]any{"repo": "r", "base": "main"}), status: 201}},
		"GET /v1/sessions":              {{variant: "allowed", path: fixed("/v1/sessions"), status: 200}},
		"GET /v1/sessions/{id}":         {{variant: "allowed", path: sess(""), status: 200}},
		"DELETE /v1/sessions/{id}": {{variant: "allowed", path: sess(""), status: 200,
			check: func(t *testing.T, e *scopeEnv, w *world, _ []byte) {
				s, err := e.m.Get(t.Context(), w.a.ID)
				require.NoError(t, err)
				assert.Equal(t, session.StateAbandoned, s.State)
			}}},
		"GET " + filesPattern: {
			{variant: "allowed", path: file("a/p.txt"), status: 200},
			{variant: "denied", path: file("data/p.txt"), status: 403},
			{variant: "denied", path: file("data/blob.bin"), status: 403},
		},
		"HEAD " + filesPattern: {
			{variant: "allowed", path: file("a/p.txt"), status: 200},
			{variant: "denied", path: file("data/blob.bin"), status: 403},
		},
		"PUT " + filesPattern: {
			{variant: "allowed", path: file("a/new.txt"), body: jsonBody("new\n"), status: 201},
			{variant: "denied", path: file("data/new.txt"), body: jsonBody("new\n"), status: 403},
			{variant: "denied", path: file("README.md"), body: jsonBody("new\n"), status: 403},
		},
		"DELETE " + filesPattern: {
			{variant: "allowed", path: file("a/mine.txt"), status: 200},
			{variant: "denied", path: file("data/blob.bin"), status: 403},
			{variant: "denied", path: file("data?recursive=true"), status: 403},
		},
		"POST /v1/sessions/{id}/edits": {
			{variant: "allowed", path: sess("/edits"), body: jsonBody(map[string]any{"edits": []map[string]any{
				{"op": "write", "path": "a/e.txt", "content": "e"},
				{"op": "copy", "path": "README.md", "to": "a/README.md"},
				{"op": "replace", "glob": "a/**", "old": "mine", "new": "ours"},
			}}), status: 200},
			{variant: "denied", path: sess("/edits"), body: jsonBody(map[string]any{"edits": []map[string]any{
				{"op": "write", "path": "a/e.txt", "content": "e"}, {"op": "write", "path": "data/e.txt", "content": "e"},
			}}), status: 403},
			{variant: "denied", path: sess("/edits"), body: jsonBody(map[string]any{"edits": []map[string]any{
				{"op": "copy", "path": "data/p.txt", "to": "a/leak.txt"},
			}}), status: 403},
			{variant: "denied", path: sess("/edits"), body: jsonBody(map[string]any{"edits": []map[string]any{
				{"op": "move", "path": "README.md", "to": "a/README.md"},
			}}), status: 403},
		},
		"GET /v1/sessions/{id}/tree": {
			{variant: "allowed", path: sess("/tree?recursive=true"), status: 200, hides: []string{"data/"},
				check: func(t *testing.T, _ *scopeEnv, _ *world, body []byte) { assert.Contains(t, string(body), "a/mine.txt") }},
			{variant: "denied", path: sess("/tree?prefix=data&recursive=true"), status: 200, hides: []string{"data/"}},
			{variant: "denied", path: sess("/tree?only_modified=true&recursive=true"), status: 200, hides: hidden},
			{variant: "denied", path: sess("/tree?glob=data/**"), status: 200, hides: []string{"data/"}},
		},
		"GET /v1/sessions/{id}/summary": {
			{variant: "denied", path: sess("/summary"), status: 200, hides: []string{`"data"`, `".bin"`},
				check: func(t *testing.T, _ *scopeEnv, _ *world, body []byte) { assert.Contains(t, string(body), `"a"`) }},
		},
		"GET /v1/sessions/{id}/diff": {
			{variant: "allowed", path: sess("/diff"), status: 200, hides: hidden,
				check: func(t *testing.T, _ *scopeEnv, _ *world, body []byte) { assert.Contains(t, string(body), "a/mine.txt") }},
			{variant: "denied", path: sess("/diff?format=json"), status: 200, hides: hidden},
		},
		"POST /v1/sessions/{id}/search": {
			{variant: "allowed", path: sess("/search"), body: jsonBody(map[string]any{"pattern": "mine"}), status: 200,
				check: func(t *testing.T, _ *scopeEnv, _ *world, body []byte) { assert.Contains(t, string(body), "a/mine.txt") }},
			{variant: "denied", path: sess("/search"), body: jsonBody(map[string]any{"pattern": "secret|bin"}), status: 200, hides: append([]string{"data/"}, hidden...)},
		},
		"GET /v1/sessions/{id}/mutations":    {{variant: "allowed", path: sess("/mutations"), status: 200}},
		"POST /v1/sessions/{id}/checkpoints": {{variant: "allowed", path: sess("/checkpoints"), body: jsonBody(map[string]any{"label": "x"}), status: 201}},
		"GET /v1/sessions/{id}/checkpoints":  {{variant: "allowed", path: sess("/checkpoints"), status: 200}},
		"POST /v1/sessions/{id}/rollback":    {{variant: "allowed", path: sess("/rollback"), body: jsonBody(map[string]any{"checkpoint": "1"}), status: 200}},
		"POST /v1/sessions/{id}/fork": {
			{variant: "allowed", path: sess("/fork"), body: jsonBody(map[string]any{}), status: 201},
			// Asking for more than a has: the fork comes out as narrow as a.
			{variant: "denied", path: sess("/fork"), body: jsonBody(map[string]any{"policy": map[string]any{"read": []string{"**"}, "write": []string{"**"}}}), status: 201,
				check: func(t *testing.T, e *scopeEnv, _ *world, body []byte) {
					var f apitypes.Session
					require.NoError(t, json.Unmarshal(body, &f))
					status, _ := e.call("GET", "/v1/sessions/"+f.ID+"/files/data/p.txt", f.Token, nil)
					assert.Equal(t, http.StatusForbidden, status, "the fork reads what a may not")
					status, _ = e.call("PUT", "/v1/sessions/"+f.ID+"/files/README.md", f.Token, "x")
					assert.Equal(t, http.StatusForbidden, status, "the fork writes what a may not")
				}},
		},
		"GET /v1/sessions/{id}/events": {{variant: "allowed", path: sess("/events"), status: 200,
			header: func(*world, string) []string { return []string{"Accept", "application/json"} }}},
		"POST /v1/sessions/{id}/rebase":   {{variant: "allowed", path: sess("/rebase"), body: jsonBody(map[string]any{}), status: 200}},
		"GET /v1/sessions/{id}/conflicts": {{variant: "allowed", path: sess("/conflicts"), status: 200}},
		// No conflict at the path: past the auth check, a 400.
		"POST /v1/sessions/{id}/resolve": {{variant: "allowed", path: sess("/resolve"), body: jsonBody(map[string]any{"paths": []string{"README.md"}}), status: 400}},
		"POST /v1/sessions/{id}/merge": {
			{variant: "allowed", path: sess("/merge"), body: func(w *world) any { return map[string]any{"from": w.c.ID.String()} },
				header: func(w *world, who string) []string { return fromToken(w.c.ID, who) }, status: 200},
			{variant: "denied", path: sess("/merge"), body: func(w *world) any { return map[string]any{"from": w.d.ID.String()} },
				header: func(w *world, who string) []string { return fromToken(w.d.ID, who) }, status: 403},
		},
		"POST /v1/sessions/{id}/exec": {{variant: "allowed", path: sess("/exec"), body: jsonBody(map[string]any{"argv": []string{"true"}}),
			status: mapError(session.ErrNoWorkdir).Status}},
		"GET /v1/sessions/{id}/exec":              {{variant: "allowed", path: sess("/exec"), status: mapError(session.ErrNoWorkdir).Status}},
		"GET /v1/sessions/{id}/runs":              {{variant: "allowed", path: sess("/runs"), status: 200}},
		"GET /v1/changesets/{id}/timeline":        {{variant: "allowed", path: qcs("/timeline"), status: 200}},
		"POST /v1/sessions/{id}/changesets":       {{variant: "allowed", path: sess("/changesets"), body: jsonBody(map[string]any{}), status: 201}},
		"GET /v1/changesets":                      {{variant: "allowed", path: fixed("/v1/changesets"), status: 200}},
		"GET /v1/changesets/{id}":                 {{variant: "allowed", path: qcs(""), status: 200}},
		"GET /v1/changesets/{id}/diff":            {{variant: "allowed", path: qcs("/diff"), status: 200}},
		"GET /v1/changesets/{id}/revisions":       {{variant: "allowed", path: qcs("/revisions"), status: 200}},
		"GET /v1/changesets/{id}/checks":          {{variant: "allowed", path: qcs("/checks"), status: 200}},
		"GET /v1/changesets/{id}/mergeability":    {{variant: "allowed", path: qcs("/mergeability"), status: 200}},
		"GET /v1/changesets/{id}/files/{path...}": {{variant: "allowed", path: qcs("/files/a/q.txt?lines=1-1"), status: 200}},
		"POST /v1/changesets/{id}/reviews":        {{variant: "allowed", path: qcs("/reviews"), body: jsonBody(map[string]any{"verdict": "approve", "author": "rev"}), status: 201}},
		"POST /v1/changesets/{id}/accept": {
			{variant: "allowed", path: qcs("/accept"), body: jsonBody(map[string]any{}), status: 200},
			// a's changeset carries data/p.txt, which a may not write.
			{variant: "denied", path: func(w *world) string { return "/v1/changesets/" + w.aCS.ID.String() + "/accept" }, body: jsonBody(map[string]any{}), status: 403},
		},
		"POST /v1/changesets/{id}/undo": {{variant: "allowed", path: qcs("/undo"), body: jsonBody(map[string]any{}), status: 200, accepted: true}},
		"POST /v1/repos/{repo}/undo": {{variant: "allowed", path: fixed("/v1/repos/r/undo"), accepted: true, status: 200,
			body: func(w *world) any { return map[string]any{"changesets": []string{w.qCS.ID.String()}} }}},
		"GET /v1/repos/{repo}/layers":      {{variant: "allowed", path: fixed("/v1/repos/r/layers?branch=main"), status: 200}},
		"GET /v1/repos/{repo}/policy":      {{variant: "allowed", path: fixed("/v1/repos/r/policy"), status: 200}},
		"PUT /v1/repos/{repo}/policy":      {{variant: "allowed", path: fixed("/v1/repos/r/policy"), body: jsonBody(map[string]any{"required_approvals": 1, "allow_checked_out": true}), status: 200}},
		"GET /v1/repos/{repo}/environment": {{variant: "allowed", path: fixed("/v1/repos/r/environment"), status: 200}},
		"PUT /v1/repos/{repo}/environment": {{variant: "allowed", path: fixed("/v1/repos/r/environment"),
			body: jsonBody(map[string]any{"env": map[string]string{"A": "1"}, "secrets": map[string]string{"TOKEN": "matrix-secret"}}), status: 200}},
		// No workdir and no cluster here: services, their ports and
		// environments are unavailable, a link not made here opens nothing and there is no
		// node to drain; what is shown is the auth in front of each.
		"POST /v1/sessions/{id}/services": {{variant: "allowed", path: sess("/services"),
			body: jsonBody(map[string]any{"name": "web", "argv": []string{"true"}, "port": 8080}), status: mapError(session.ErrNoWorkdir).Status}},
		"GET /v1/sessions/{id}/services":             {{variant: "allowed", path: sess("/services"), status: mapError(session.ErrNoWorkdir).Status}},
		"DELETE /v1/sessions/{id}/services/{name}":   {{variant: "allowed", path: sess("/services/web"), status: mapError(session.ErrNoWorkdir).Status}},
		"GET /v1/sessions/{id}/services/{name}/logs": {{variant: "allowed", path: sess("/services/web/logs"), status: mapError(session.ErrNoWorkdir).Status}},
		"POST /v1/sessions/{id}/ports/{port}/link":   {{variant: "allowed", path: sess("/ports/8080/link"), body: jsonBody(map[string]any{"ttl_seconds": 60}), status: mapError(session.ErrNoWorkdir).Status}},
		"GET " + portsPattern:                        {{variant: "allowed", path: sess("/ports/8080/index.html"), status: mapError(session.ErrNoWorkdir).Status}},
		"POST " + portsPattern:                       {{variant: "allowed", path: sess("/ports/8080/form"), body: jsonBody(map[string]any{}), status: mapError(session.ErrNoWorkdir).Status}},
		"GET " + linksPattern:                        {{variant: "allowed", path: fixed("/v1/links/not-a-link/index.html"), status: 401}},
		"POST " + linksPattern:                       {{variant: "allowed", path: fixed("/v1/links/not-a-link/form"), body: jsonBody(map[string]any{}), status: 401}},
		"GET /v1/repos/{repo}/environments":          {{variant: "allowed", path: fixed("/v1/repos/r/environments"), status: mapError(session.ErrNoWorkdir).Status}},
		"POST /v1/repos/{repo}/environments/rebuild": {{variant: "allowed", path: fixed("/v1/repos/r/environments/rebuild"), body: jsonBody(map[string]any{}), status: mapError(session.ErrNoWorkdir).Status}},
		"GET /v1/cluster":                            {{variant: "allowed", path: fixed("/v1/cluster"), status: 200}},
		"POST /v1/cluster/nodes/{node}/drain":        {{variant: "allowed", path: fixed("/v1/cluster/nodes/n1/drain"), body: jsonBody(map[string]any{}), status: 503}},
		"POST /v1/reviewers":                         {{variant: "allowed", path: fixed("/v1/reviewers"), body: jsonBody(map[string]any{"name": "rita"}), status: 201}},
		// No MCP handler is configured here: a caller the route admits
		// gets not_found, which still shows the auth in front of it.
		"POST /mcp":                 {{variant: "allowed", path: fixed("/mcp"), body: jsonBody(map[string]any{}), status: 404}},
		"GET /mcp":                  {{variant: "allowed", path: fixed("/mcp"), status: 404}},
		"DELETE /mcp":               {{variant: "allowed", path: fixed("/mcp"), status: 404}},
		"POST /mcp/sessions/{id}":   {{variant: "allowed", path: mcpSess, body: jsonBody(map[string]any{}), status: 404}},
		"GET /mcp/sessions/{id}":    {{variant: "allowed", path: mcpSess, status: 404}},
		"DELETE /mcp/sessions/{id}": {{variant: "allowed", path: mcpSess, status: 404}},
	}
}

func qcs(rest string) func(w *world) string {
	return func(w *world) string { return "/v1/changesets/" + w.qCS.ID.String() + rest }
}

func mcpSess(w *world) string { return "/mcp/sessions/" + w.a.ID.String() }

// fromToken is the header a session token needs to merge session from.
func fromToken(from uuid.UUID, who string) []string {
	if who == "admin" || who == "none" {
		return nil
	}
	return []string{apitypes.FromTokenHeader, "from:" + from.String()}
}

// TestAuthMatrix runs every route with the admin token, a's own session
// token, another session's token and no token, on paths a's policy allows
// and denies, and checks each status. A refused call (any 4xx or 5xx)
// must change nothing at all; a call that succeeds on a path the policy
// hides must not show it.
//
// It exercises no concurrency and makes a few hundred durable writes, so
// make test runs it in its plain run and not again under -race.
func TestAuthMatrix(t *testing.T) {
	if raceEnabled {
		t.Skip("no concurrency here; the plain test run covers it")
	}
	cases := matrix()
	seen := map[string]bool{}
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		seen[key] = true
		calls, ok := cases[key]
		if !assert.True(t, ok, "route %s has no row in the auth matrix", key) {
			continue
		}
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			e := newScopeEnv(t)
			// A refused call is asserted to change nothing, so refused
			// calls share one world per kind; each call that succeeds
			// gets a fresh one.
			shared := map[bool]*world{}
			for _, c := range calls {
				for _, who := range []string{"admin", "own", "other", "reviewer", "none"} {
					want := expected(rt.scope, who, c.status)
					w := shared[c.accepted]
					if w == nil || want < 400 {
						w = e.newWorld(c.accepted)
						if want >= 400 {
							shared[c.accepted] = w
						}
					}
					token := map[string]string{
						"admin": testAdminToken, "own": e.api.auth.sessionToken(w.a.ID), "other": e.api.auth.sessionToken(w.b.ID),
						"reviewer": e.api.auth.reviewerToken("rita"),
					}[who]
					var header []string
					if c.header != nil {
						header = c.header(w, who)
						for i := 1; i < len(header); i += 2 {
							if id, ok := strings.CutPrefix(header[i], "from:"); ok {
								header[i] = e.api.auth.sessionToken(uuid.MustParse(id))
							}
						}
					}
					var body any
					if c.body != nil {
						body = c.body(w)
					}
					path := c.path(w)
					before := e.fingerprint()
					var status int
					var resp []byte
					if c.stream {
						status, resp = e.callStream(rt.Method, path, token, header...)
					} else {
						status, resp = e.call(rt.Method, path, token, body, header...)
					}
					name := fmt.Sprintf("%s %s (%s) as %s", rt.Method, path, c.variant, who)
					if !assert.Equal(t, want, status, "%s: %s", name, resp) {
						continue
					}
					if status >= 400 {
						assert.Equal(t, before, e.fingerprint(), "%s was refused but changed something", name)
						continue
					}
					for _, h := range c.hides {
						assert.NotContains(t, string(resp), h, "%s shows what the policy hides", name)
					}
					if c.check != nil {
						c.check(t, e, w, resp)
					}
				}
			}
		})
	}
	for key := range cases {
		assert.True(t, seen[key], "the auth matrix has a row for %s, which is no route", key)
	}
}

// expected is the status of a call by who on a route of scope sc, where
// status is the answer for a caller the route admits. The changeset
// routes' changeset is q's, so a's own token reaches none of them: the
// review route admits session tokens and leaves the refusal to the
// changeset rules (a session reviews only its own changesets).
func expected(sc scope, who string, status int) int {
	switch {
	case sc == scopePublic:
		return status
	case who == "none":
		return http.StatusUnauthorized
	case who == "reviewer" && (sc == scopeReader || sc == scopeReview):
		return status
	case who == "other", who == "reviewer":
		return http.StatusForbidden
	case who == "own" && sc != scopeSession:
		return http.StatusForbidden
	}
	return status
}

// callStream is call for a route that answers with an event stream: it
// returns the status once the headers arrive, and the body of an error.
func (e *scopeEnv) callStream(method, path, token string, header ...string) (int, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, nil)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		data, err := io.ReadAll(resp.Body)
		require.NoError(e.t, err)
		return resp.StatusCode, data
	}
	return resp.StatusCode, nil
}
