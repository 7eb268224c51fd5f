// Package record holds what the session engine, the changeset package and
// the store share, so that session and changeset stay peers that do not
// import each other: the error kinds every layer returns (each maps to one
// API error code), the event log's record, a session's lifecycle states,
// and the few views of a session that changesets act on (SessionInfo,
// Held and StateTx), which the session engine implements.
//
// Invariants:
//   - One value per error kind. Package session re-exports these same
//     values under its own names, the store translates its drivers' errors
//     into them, and the API maps each to one code; errors.Is works across
//     all of them.
//   - No behaviour beyond the types' own small rules (State.Terminal,
//     SessionInfo.Author, Payload): the engines own what happens to the
//     records.
//
// Everything here is plain values and interfaces, safe to share.
package record
