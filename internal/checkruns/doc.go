// Package checkruns joins the command runner to the checks of changesets:
// it hands package changeset every command a session ran, as the daemon
// wires it (cmd/sessiond) and the tests do (internal/testengine). Neither
// package imports the other.
//
// It owns no state: a run that cannot be kept is logged, never returned
// to the command's caller (the command ran; its answer does not depend on
// the record).
package checkruns
