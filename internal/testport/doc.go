// Package testport hands tests loopback TCP ports for processes that must
// be told their port before they listen (a daemon with an advertised URL,
// git daemon, a server run on the host).
//
// Invariants: a port from Free is below the kernel's ephemeral range, so
// no outgoing connection of any process takes it between the asking and
// the bind (or a restart on the same port); nothing listened on it when
// it was handed out; and one test binary never hands out a port twice.
package testport
