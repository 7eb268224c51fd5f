// Package api serves the session engine over HTTP: the routes of API v1,
// bearer-token auth with admin, session-scoped and reviewer tokens, the
// browser-safety rules, request body limits, Server-Sent Events, and the
// operational endpoints (/healthz, /readyz, /metrics).
//
// Auth, in one place each (auth.go): principalOf checks every token, the
// admin token by hash and the session and reviewer tokens by recomputing
// their HMAC with the token key (they are derived, never stored, so there
// is no table to leak; rotating the key revokes them all); authorize holds
// a principal to its route's scope; reviewerOf is the identity a review is
// by (a reviewer token's name, the local user when there is no admin
// token, the session for a session token, a name merely asserted for the
// admin token), which package changeset's vote rules count. A reviewer
// token reads changesets, their diffs, revisions, reviews, checks and
// mergeability, a branch's layers and the accept policy, and reviews;
// accept, undo and everything else stay the admin's. /readyz answers everyone but names repositories
// only to the admin.
//
// Browser safety (browser.go): Server.Guard, around the daemon's whole
// handler, refuses a Host that is not one of the daemon's names and an
// Origin that is not its own; handlerFor refuses a POST body that is not
// JSON (415). Requests that never crossed a network (client.NewInProcess)
// reach the Server without Guard. JSON bodies are read through
// apitypes.CheckedReader, so a string that is not valid Unicode is refused
// (invalid_path for a path) instead of becoming U+FFFD. Events pass
// through eventFor, which keeps other sessions' ids from any token but the
// admin's.
//
// It owns no business logic: every handler decodes its request, calls one
// method of the part it is handed that owns what it asks (the session
// engine, the Executor, the changeset service, the registry of
// repositories, the event log) and encodes the result. thin_test.go
// checks this on the source, for every route, with four exceptions it
// names: creating a repository calls Init or Register, whichever the
// request asks; the two event routes look up the session or repository
// they name, then list or stream the log; /readyz probes every part.
// What a route shows is composed in the engine (a changeset's view with
// its symbols, an edit batch with its diff, a search with its context
// lines), so the CLI, the page and the MCP tools show the same. Errors from every layer go
// through one mapper (errors.go) that turns them into the error model of
// the API: {"error":{"code","message",…details}} with a stable code.
// A request that writes (Route.writes) runs detached from its client and
// under Config.WriteTimeout (handlerFor), so none waits forever for a
// session's lock or the store; one that outlives it is a
// *WriteTimeoutError, 503 unavailable naming the timeout.
// The lack of space is remembered (space.go) until /readyz's probe of what
// filled finds room again, and /readyz reports it meanwhile.
//
// A request authenticated with anything but the admin token carries its
// reach (record.Reach) in its context (withPrincipal), so the engines
// resolve every revision it names within it: a session token reaches its
// own session's refs, the branches and tags, and what they reach. No
// handler checks a revision itself; revscope_test.go walks every route
// that takes one.
//
// The wire types are package apitypes, shared with package client; the
// conversions from the engine's values to them (types.go and beside each
// handler) are here, so the engine's types never reach the wire directly.
//
// Server is safe for concurrent use once built; Routes is the table the
// OpenAPI test checks against openapi.yaml.
package api
