// Package session is the session engine: session lifecycle, file operations
// over an overlay, the mutation log, checkpoints, rollback, fork, rebase,
// merge and events. It declares the Store interface it needs for metadata;
// package db implements it for Postgres and for the embedded SQLite default.
package session
