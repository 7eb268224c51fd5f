// Package egress is the daemon's egress proxy: what lets a command whose
// repository's policy names an allowlist (network: {"allow": [...]})
// reach the hosts on that list and nothing else.
//
// It owns two things:
//   - The allowlist (Allowlist, ParseAllowlist): host names
//     (proxy.golang.org), wildcards (*.npmjs.org: any name below
//     npmjs.org, not npmjs.org itself), IP addresses and CIDRs
//     (10.0.0.0/8). ParseAllowlist is the one place that says what an
//     entry may be; the repository's policy check calls it.
//   - The proxy (Proxy): an HTTP proxy, CONNECT for tunnels (HTTPS) and
//     absolute-form requests for plain HTTP, on net/http's server and
//     httputil.ReverseProxy (no parser of its own). It serves one
//     command's connections on a listener the command reaches (package
//     workdir puts it in the command's network namespace, where nothing
//     else is routable) and remembers each destination it refused.
//
// How a destination is admitted (Proxy.admit):
//   - An IP address asked for directly is admitted when a CIDR or IP
//     entry holds it.
//   - A name matched by a host name or wildcard entry is resolved by the
//     proxy and dialed at the addresses it resolved, except loopback,
//     link-local (cloud metadata), unspecified and multicast addresses,
//     which a CIDR entry must name explicitly: a listed name cannot lead
//     to the daemon's own API or the metadata service by its DNS answer.
//   - Any other name is refused, unresolved, when the list has no CIDR
//     entries; otherwise it is resolved and dialed only at the resolved
//     addresses a CIDR entry holds (none: refused). So with CIDR entries
//     the proxy resolves names it then refuses; a list of names only
//     never resolves a name outside it.
//   - Each name is resolved once per connection and the very addresses
//     checked are dialed: a DNS answer that changes between the check and
//     the dial (rebinding) never reaches an address the list refuses.
//
// The proxy dials directly: it does not itself go through a proxy named
// in the daemon's environment. A list that names loopback (127.0.0.0/8)
// lets commands reach what listens on the daemon's host loopback, its
// own API included.
//
// Concurrency: a Proxy is safe for concurrent use; Proxy.mu guards the
// refused list and the open tunnels. Serve is called once.
package egress
