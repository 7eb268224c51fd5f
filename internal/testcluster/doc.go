// Package testcluster runs a cluster for end-to-end tests: N real
// `sessiond serve` processes (the binary testdaemon.Main built), each with
// its own data directory and a node id, on one fresh PostgreSQL schema
// (pgtest), and an origin repository served by `git daemon
// --enable=receive-pack` on a loopback port, which the nodes register with
// a git:// URL.
//
// Invariants: every process it starts (the nodes, git daemon) is stopped
// when the test ends, by its own process id; a node's log is printed when
// the test failed (testdaemon's).
package testcluster
