package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// What a route's input names: a revision in git's syntax, resolved
// within the caller's reach (openapi.yaml's schema Revision), or a
// checkpoint of the route's session (schema CheckpointRef).
const (
	kindRevision   = "Revision"
	kindCheckpoint = "CheckpointRef"
)

// revisionInput is an input of a route that names a revision or a
// checkpoint: a query parameter or a field of the JSON body.
type revisionInput struct {
	in   string // "query" or "body"
	name string
	kind string
}

// revisionInputs classifies every route of Routes() by the revisions and
// checkpoints it reads. A route that reads none is listed with none: a
// new route fails TestEveryRouteSaysWhichRevisionsItTakes until it is
// classified here, and TestRevisionInputsMatchOpenAPI until the table
// and openapi.yaml agree; TestRevisionScopeOnEveryRoute then walks each
// input listed.
var revisionInputs = map[string][]revisionInput{
	"GET /healthz": nil, "GET /readyz": nil, "GET /metrics": nil,
	"POST /v1/repos": nil, "GET /v1/repos": nil, "GET /v1/repos/{repo}": nil, "GET /v1/repos/{repo}/branches": nil,
	"GET /v1/repos/{repo}/events": nil,

	// Services, ports, links, environments and the cluster read no
	// revision.
	"POST /v1/sessions/{id}/services": nil, "GET /v1/sessions/{id}/services": nil,
	"DELETE /v1/sessions/{id}/services/{name}": nil, "GET /v1/sessions/{id}/services/{name}/logs": nil,
	"POST /v1/sessions/{id}/ports/{port}/link": nil,
	"GET " + portsPattern:                      nil, "POST " + portsPattern: nil, "GET " + linksPattern: nil, "POST " + linksPattern: nil,
	"GET /v1/repos/{repo}/environments": nil, "POST /v1/repos/{repo}/environments/rebuild": nil,
	"GET /v1/cluster": nil, "POST /v1/cluster/nodes/{node}/drain": nil,

	"POST /v1/sessions":                        {{"body", "base", kindRevision}},
	"GET /v1/sessions":                         nil,
	"GET /v1/sessions/{id}":                    nil,
	"DELETE /v1/sessions/{id}":                 nil,
	"GET /v1/sessions/{id}/files/{path...}":    nil,
	"HEAD /v1/sessions/{id}/files/{path...}":   nil,
	"PUT /v1/sessions/{id}/files/{path...}":    nil,
	"DELETE /v1/sessions/{id}/files/{path...}": nil,
	"POST /v1/sessions/{id}/edits":             nil,
	"GET /v1/sessions/{id}/tree":               nil,
	"GET /v1/sessions/{id}/summary":            nil,
	"GET /v1/sessions/{id}/diff":               {{"query", "against", kindRevision}},
	"POST /v1/sessions/{id}/search":            nil,
	"GET /v1/sessions/{id}/mutations":          nil,
	"POST /v1/sessions/{id}/checkpoints":       nil, // a label and a message
	"GET /v1/sessions/{id}/checkpoints":        nil,
	"POST /v1/sessions/{id}/rollback":          {{"body", "checkpoint", kindCheckpoint}},
	"POST /v1/sessions/{id}/fork":              {{"body", "checkpoint", kindCheckpoint}},
	"GET /v1/sessions/{id}/events":             nil,
	"POST /v1/sessions/{id}/rebase":            {{"body", "onto", kindRevision}},
	"POST /v1/sessions/{id}/merge":             nil, // a session id, read with its token (TestMergeNeedsReadOnFrom)
	"GET /v1/sessions/{id}/conflicts":          nil,
	"POST /v1/sessions/{id}/resolve":           nil, // paths of the session
	"POST /v1/sessions/{id}/exec":              nil,
	"POST /v1/sessions/{id}/changesets":        nil, // target_branch names a branch to write, not a revision to read
	"GET /v1/changesets":                       nil,
	"GET /v1/changesets/{id}":                  nil,
	"GET /v1/changesets/{id}/diff":             nil,
	"GET /v1/changesets/{id}/revisions":        nil,
	"GET /v1/changesets/{id}/checks":           nil,
	"GET /v1/changesets/{id}/mergeability":     nil,
	"GET /v1/changesets/{id}/files/{path...}":  nil,
	"GET /v1/changesets/{id}/timeline":         nil,
	"GET /v1/sessions/{id}/runs":               nil,
	"GET /v1/sessions/{id}/exec":               nil,
	"POST /v1/changesets/{id}/reviews":         nil,
	"POST /v1/changesets/{id}/accept":          {{"body", "expected_head", kindRevision}},
	"POST /v1/changesets/{id}/undo":            nil,
	"POST /v1/repos/{repo}/undo":               nil,
	"POST /v1/reviewers":                       nil,
	"GET /v1/repos/{repo}/layers":              nil, // branch names a branch's layers in the store
	"GET /v1/repos/{repo}/policy":              nil,
	"PUT /v1/repos/{repo}/policy":              nil,
	"GET /v1/repos/{repo}/environment":         nil,
	"PUT /v1/repos/{repo}/environment":         nil,
	"POST /mcp":                                nil, "GET /mcp": nil, "DELETE /mcp": nil, // the tools call these routes: mcpserver's TestToolRevisionScope
	"POST /mcp/sessions/{id}": nil, "GET /mcp/sessions/{id}": nil, "DELETE /mcp/sessions/{id}": nil,
}

func routeKey(rt Route) string { return rt.Method + " " + rt.Pattern }

// TestEveryRouteSaysWhichRevisionsItTakes fails for a route that
// revisionInputs does not classify, and for an entry no route has.
func TestEveryRouteSaysWhichRevisionsItTakes(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range Routes() {
		served[routeKey(rt)] = true
		_, ok := revisionInputs[routeKey(rt)]
		assert.True(t, ok, "route %s: say in revisionInputs which revisions and checkpoints it reads (none: nil)", routeKey(rt))
	}
	for k := range revisionInputs {
		assert.True(t, served[k], "revisionInputs lists %s, which is not a route", k)
	}
}

// TestRevisionInputsMatchOpenAPI: the inputs openapi.yaml types as
// Revision or CheckpointRef (query parameters and request body fields)
// are exactly those revisionInputs lists.
func TestRevisionInputsMatchOpenAPI(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "openapi.yaml"))
	require.NoError(t, err)
	var doc struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Ref string `yaml:"$ref"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	kindOf := func(ref string) string {
		switch ref {
		case "#/components/schemas/" + kindRevision:
			return kindRevision
		case "#/components/schemas/" + kindCheckpoint:
			return kindCheckpoint
		}
		return ""
	}
	type operation struct {
		Parameters []struct {
			Name   string `yaml:"name"`
			In     string `yaml:"in"`
			Schema struct {
				Ref string `yaml:"$ref"`
			} `yaml:"schema"`
		} `yaml:"parameters"`
		RequestBody struct {
			Content map[string]struct {
				Schema struct {
					Ref string `yaml:"$ref"`
				} `yaml:"schema"`
			} `yaml:"content"`
		} `yaml:"requestBody"`
	}
	documented := map[string][]revisionInput{}
	for path, item := range doc.Paths {
		for method, node := range item {
			switch method {
			case "get", "put", "post", "delete", "head", "patch", "options":
			default:
				continue
			}
			var op operation
			require.NoError(t, node.Decode(&op), "%s %s", method, path)
			key := strings.ToUpper(method) + " " + path
			for _, p := range op.Parameters {
				if k := kindOf(p.Schema.Ref); k != "" {
					documented[key] = append(documented[key], revisionInput{p.In, p.Name, k})
				}
			}
			for _, c := range op.RequestBody.Content {
				name := strings.TrimPrefix(c.Schema.Ref, "#/components/schemas/")
				for field, prop := range doc.Components.Schemas[name].Properties {
					if k := kindOf(prop.Ref); k != "" {
						documented[key] = append(documented[key], revisionInput{"body", field, k})
					}
				}
			}
		}
	}
	for key, want := range revisionInputs {
		got := documented[strings.ReplaceAll(key, "...}", "}")]
		assert.ElementsMatch(t, want, got, "%s: the revisions of revisionInputs and of openapi.yaml", key)
	}
}

// revScope is a server with two sessions: a, the caller, with a
// checkpoint and unsaved work, and b, another session of the same
// repository whose checkpoint and live view hold content nobody accepted.
type revScope struct {
	*scopeEnv
	b          apitypes.Session
	bCP        apitypes.Checkpoint
	bLive      string
	mainParent string
}

func newRevScope(t *testing.T) *revScope {
	t.Helper()
	e := &revScope{scopeEnv: newScopeEnv(t)}
	e.b = e.session(apitypes.CreateSessionRequest{})
	e.put(e.b, "secret.txt", "b's unaccepted secret\n")
	e.bCP = e.checkpoint(e.b)
	e.put(e.b, "secret.txt", "b's unsaved secret\n")
	e.bLive = e.liveTree(e.b)
	e.mainParent = testrepo.Git(t, e.repo, "rev-parse", "main~1")
	return e
}

func (e *revScope) put(s apitypes.Session, path, content string) {
	e.t.Helper()
	status, body := e.call("PUT", "/v1/sessions/"+s.ID+"/files/"+path, s.Token, content)
	require.Contains(e.t, []int{http.StatusOK, http.StatusCreated}, status, "%s", body)
}

func (e *revScope) checkpoint(s apitypes.Session) apitypes.Checkpoint {
	e.t.Helper()
	status, body := e.call("POST", "/v1/sessions/"+s.ID+"/checkpoints", s.Token, nil)
	require.Equal(e.t, http.StatusCreated, status, "%s", body)
	var cp apitypes.Checkpoint
	require.NoError(e.t, json.Unmarshal(body, &cp))
	return cp
}

func (e *revScope) liveTree(s apitypes.Session) string {
	e.t.Helper()
	tree, _, err := e.m.Tree(e.t.Context(), mustUUID(e.t, s.ID))
	require.NoError(e.t, err)
	return tree.String()
}

// foreign is what a's token must not name: b's refs, full and short, its
// checkpoint's commit (full, abbreviated, navigated) and tree, its live
// tree; for a checkpoint input, b's checkpoint by its commit and id.
func (e *revScope) foreign(kind string) []string {
	if kind == kindCheckpoint {
		return []string{e.bCP.Commit, e.bCP.ID}
	}
	refs := "refs/sessions/" + e.b.ID
	return []string{refs + "/head", refs + "/live", refs + "/base", refs + "/checkpoints/1", "sessions/" + e.b.ID + "/head",
		e.bCP.Commit, e.bCP.Commit[:7], e.bCP.Commit[:12] + "^{commit}", e.bCP.Commit + "~0",
		e.bCP.Tree, e.bCP.Tree[:9], e.bLive, e.bLive[:10]}
}

// own is what a's token may name: its own refs and checkpoint (full and
// abbreviated), its live tree, the branches and tags and a commit they
// reach, by id.
func (e *revScope) own(kind string, c caller) []string {
	if kind == kindCheckpoint {
		return []string{"1", c.cp.ID, c.cp.Commit}
	}
	refs := "refs/sessions/" + c.s.ID
	return []string{refs + "/head", refs + "/live", "sessions/" + c.s.ID + "/checkpoints/1", c.cp.Commit, c.cp.Commit[:8], c.live, c.live[:10],
		"main", "HEAD", "v1", "refs/heads/feature", e.mainParent, e.mainParent[:9]}
}

// caller is session a, made for one request: a checkpoint, then unsaved
// work; for the accept route, a submitted changeset too.
type caller struct {
	s    apitypes.Session
	cp   apitypes.Checkpoint
	live string
	cs   string // its changeset's id
}

func (e *revScope) newCaller(submit bool) caller {
	e.t.Helper()
	c := caller{s: e.session(apitypes.CreateSessionRequest{})}
	e.put(c.s, "mine.txt", "a's work in "+c.s.ID+"\n")
	c.cp = e.checkpoint(c.s)
	e.put(c.s, "mine.txt", "a's unsaved work in "+c.s.ID+"\n")
	c.live = e.liveTree(c.s)
	if submit {
		status, body := e.call("POST", "/v1/sessions/"+c.s.ID+"/changesets", c.s.Token, apitypes.SubmitRequest{Intent: "a's change"})
		require.Equal(e.t, http.StatusCreated, status, "%s", body)
		var cs apitypes.Changeset
		require.NoError(e.t, json.Unmarshal(body, &cs))
		c.cs = cs.ID
	}
	return c
}

// request calls route rt for session s (or its changeset) with value in
// input in.
func (e *revScope) request(rt Route, in revisionInput, value, sessionID, changesetID, token string) (int, []byte) {
	e.t.Helper()
	path := strings.ReplaceAll(rt.Pattern, "{repo}", "r")
	if strings.HasPrefix(path, "/v1/changesets/") {
		path = strings.ReplaceAll(path, "{id}", changesetID)
	}
	path = strings.ReplaceAll(path, "{id}", sessionID)
	body := map[string]any{}
	if rt.Pattern == "/v1/sessions" {
		body["repo"] = "r"
	}
	if in.in == "query" {
		path += "?" + in.name + "=" + url.QueryEscape(value)
	} else {
		body[in.name] = value
	}
	return e.call(rt.Method, path, token, body)
}

// observed is what a refused request must leave as it was: the caller's
// session, its mutations, and the repository's sessions.
func (e *revScope) observed(c caller) string {
	e.t.Helper()
	_, s := e.call("GET", "/v1/sessions/"+c.s.ID, c.s.Token, nil)
	var sess map[string]any
	require.NoError(e.t, json.Unmarshal(s, &sess))
	delete(sess, "last_active_at")
	_, muts := e.call("GET", "/v1/sessions/"+c.s.ID+"/mutations", c.s.Token, nil)
	_, all := e.call("GET", "/v1/sessions", testAdminToken, nil)
	var list apitypes.Sessions
	require.NoError(e.t, json.Unmarshal(all, &list))
	sj, _ := json.Marshal(sess)
	return string(sj) + string(muts) + strconv.Itoa(len(list.Sessions))
}

// TestRevisionScopeOnEveryRoute walks every route that takes a revision
// or a checkpoint (revisionInputs): with a session token, another
// session's refs, its checkpoint's commit in full and abbreviated, its
// trees and its checkpoints are not_found, named in the message, exactly
// as a revision that names nothing, and change nothing; the session's
// own refs and checkpoint, the branches, tags and the commits they reach
// are not refused. The admin token reaches the other session's
// revisions; a checkpoint of another session it reaches on that
// session's own route, where the first session's token is refused.
func TestRevisionScopeOnEveryRoute(t *testing.T) {
	plainRunOnly(t, "a table of every route that takes a revision, one request at a time")
	walked := 0
	for _, rt := range Routes() {
		for _, in := range revisionInputs[routeKey(rt)] {
			walked++
			t.Run(routeKey(rt)+"/"+in.name, func(t *testing.T) {
				e := newRevScope(t)
				submit := strings.HasPrefix(rt.Pattern, "/v1/changesets/")
				if rt.scope == scopeAdmin {
					// A session token cannot call the route at all; the
					// admin token names b's revisions.
					for _, v := range e.foreign(in.kind) {
						c := e.newCaller(submit)
						status, body := e.request(rt, in, v, c.s.ID, c.cs, c.s.Token)
						assert.Equal(t, http.StatusForbidden, status, "%s with a session token: %s", v, body)
						status, body = e.request(rt, in, v, c.s.ID, c.cs, testAdminToken)
						assert.NotEqual(t, http.StatusNotFound, status, "%s with the admin token: %s", v, body)
						assert.Less(t, status, 500, "%s: %s", v, body)
					}
					return
				}
				require.Equal(t, scopeSession, rt.scope)
				for _, v := range e.foreign(in.kind) {
					c := e.newCaller(submit)
					before := e.observed(c)
					status, body := e.request(rt, in, v, c.s.ID, c.cs, c.s.Token)
					if assert.Equal(t, http.StatusNotFound, status, "%s with a's token: %s", v, body) {
						assert.Equal(t, apitypes.CodeNotFound, errorCode(body), "%s", body)
						assert.Contains(t, errorMessage(t, body), strconv.Quote(v), "the message names the revision")
					}
					assert.Equal(t, before, e.observed(c), "%s: nothing changed", v)
					status, _ = e.call("GET", "/v1/sessions/"+c.s.ID+"/files/secret.txt", c.s.Token, nil)
					assert.Equal(t, http.StatusNotFound, status, "%s: a never sees b's file", v)

					if in.kind == kindCheckpoint {
						// b's checkpoint is b's: the admin reaches it on
						// b's route, a's token does not.
						status, body = e.request(rt, in, v, e.b.ID, "", c.s.Token)
						assert.Equal(t, http.StatusForbidden, status, "%s on b's route with a's token: %s", v, body)
						if rt.Pattern != "/v1/sessions/{id}/rollback" { // rolling b back would change what the next value finds
							status, body = e.request(rt, in, v, e.b.ID, "", testAdminToken)
							assert.Less(t, status, 300, "%s on b's route with the admin token: %s", v, body)
						}
						continue
					}
					status, body = e.request(rt, in, v, c.s.ID, c.cs, testAdminToken)
					assert.NotEqual(t, http.StatusNotFound, status, "%s with the admin token: %s", v, body)
					assert.Less(t, status, 500, "%s: %s", v, body)
				}
				// a's own names, each on a fresh a where the request changes
				// it (a rebase, a fork, a rollback).
				c := e.newCaller(submit)
				for i := range e.own(in.kind, c) {
					if rt.Method != "GET" {
						c = e.newCaller(submit)
					}
					v := e.own(in.kind, c)[i]
					status, body := e.request(rt, in, v, c.s.ID, c.cs, c.s.Token)
					assert.NotEqual(t, http.StatusNotFound, status, "%s with a's token: %s", v, body)
					assert.Less(t, status, 500, "%s: %s", v, body)
				}
			})
		}
	}
	assert.Equal(t, 6, walked, "every input of revisionInputs was walked")
}

func errorMessage(t testing.TB, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e.Error.Message
}

// TestRebaseOntoAnotherSessionThenRead: the finding of issue 20 as it was
// tried: a rebase onto another session's head, then a read of the file
// only that session holds. With a session token the rebase is
// not_found and the file stays unreadable; the admin's rebase brings it
// in, so the refusal is what kept it out.
func TestRebaseOntoAnotherSessionThenRead(t *testing.T) {
	e := newRevScope(t)
	a := e.newCaller(false)
	secret := "/v1/sessions/" + a.s.ID + "/files/secret.txt"
	for _, onto := range []string{"refs/sessions/" + e.b.ID + "/head", e.bCP.Commit[:8]} {
		status, body := e.call("POST", "/v1/sessions/"+a.s.ID+"/rebase", a.s.Token, apitypes.RebaseRequest{Onto: onto})
		assert.Equal(t, http.StatusNotFound, status, "%s: %s", onto, body)
		status, _ = e.call("GET", secret, a.s.Token, nil)
		assert.Equal(t, http.StatusNotFound, status, onto)
	}
	status, body := e.call("POST", "/v1/sessions/"+a.s.ID+"/rebase", testAdminToken, apitypes.RebaseRequest{Onto: "refs/sessions/" + e.b.ID + "/head"})
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = e.call("GET", secret, a.s.Token, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "b's unaccepted secret\n", string(body))
}

// TestForkFromAnotherSessionsCheckpoint: a fork takes a checkpoint of the
// session forked only; another session's, by commit or id, is not_found
// and creates nothing, with a session token as with the admin's.
func TestForkFromAnotherSessionsCheckpoint(t *testing.T) {
	e := newRevScope(t)
	a := e.newCaller(false)
	count := func() int {
		_, body := e.call("GET", "/v1/sessions", testAdminToken, nil)
		var list apitypes.Sessions
		require.NoError(t, json.Unmarshal(body, &list))
		return len(list.Sessions)
	}
	before := count()
	for _, cp := range []string{e.bCP.Commit, e.bCP.ID} {
		for _, token := range []string{a.s.Token, testAdminToken} {
			status, body := e.call("POST", "/v1/sessions/"+a.s.ID+"/fork", token, apitypes.ForkRequest{Checkpoint: cp})
			assert.Equal(t, http.StatusNotFound, status, "%s: %s", cp, body)
		}
	}
	assert.Equal(t, before, count(), "no session was created")
	status, body := e.call("POST", "/v1/sessions/"+e.b.ID+"/fork", testAdminToken, apitypes.ForkRequest{Checkpoint: e.bCP.Commit})
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var fork apitypes.Session
	require.NoError(t, json.Unmarshal(body, &fork))
	status, body = e.call("GET", "/v1/sessions/"+fork.ID+"/files/secret.txt", fork.Token, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "b's unaccepted secret\n", string(body), "b's fork starts from b's checkpoint")
}
