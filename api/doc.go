// Package api serves the session engine over HTTP: the routes of API v1,
// bearer-token auth with admin and session-scoped tokens, request body
// limits, Server-Sent Events, and the operational endpoints (/healthz,
// /readyz, /metrics).
//
// It owns no business logic: every handler decodes its request, calls one
// method of the part it is handed that owns what it asks (the session
// engine, the Executor, the changeset service, the registry of
// repositories, the event log) and encodes the result. Errors from every layer go
// through one mapper (errors.go) that turns them into the error model of
// the API: {"error":{"code","message",…details}} with a stable code.
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
