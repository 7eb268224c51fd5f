// Package record holds what the session engine, the changeset package and
// the store share, so that session and changeset stay peers that do not
// import each other: the error kinds every layer returns (each maps to one
// API error code), a session's lifecycle states, the few views of a session that changesets act on (SessionInfo,
// Held and StateTx), which the session engine implements, and a caller's
// Reach, which the API puts in a request's context and the engines
// resolve revisions within, and the rule that makes an agent one identity
// (AgentIdentity: an id or a name alone is both), which the engine
// applies when a session starts and every view of an agent shows.
//
// Invariants:
//   - One name per error kind: this package is the only home of the kinds
//     the engines and the store share (nobody re-exports them under
//     another name), the store translates its drivers' errors into them,
//     and the API maps each to one code (api/errors.go). Kinds only one
//     engine returns are that engine's (session.ErrBusy, …).
//   - No behaviour beyond the types' own small rules (State.Terminal,
//     AgentIdentity, SessionInfo.Author): the engines own what happens to
//     the records.
//
// Everything here is plain values and interfaces, safe to share.
package record
