package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// MaxEntries bounds an allowlist.
const MaxEntries = 1000

// EntryError is an allowlist entry that is not a host name, wildcard, IP
// address or CIDR; Index is its place in the list.
type EntryError struct {
	Index  int
	Entry  string
	Reason string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("allow[%d] %q: %s; want a host name (proxy.golang.org), a wildcard (*.npmjs.org), an IP address (10.1.2.3) or a CIDR (10.0.0.0/8)", e.Index, e.Entry, e.Reason)
}

// Allowlist is a parsed list of the destinations a command may reach.
// The zero value admits nothing.
type Allowlist struct {
	entries  []string
	names    map[string]bool
	suffixes []string // ".npmjs.org" for *.npmjs.org
	prefixes []netip.Prefix
}

// ParseAllowlist parses entries: host names, wildcards ("*." and a host
// name), IP addresses and CIDRs. Names are matched without regard to
// case and a trailing dot. The first entry that is none of these is an
// *EntryError.
func ParseAllowlist(entries []string) (*Allowlist, error) {
	if len(entries) > MaxEntries {
		return nil, &EntryError{Index: MaxEntries, Entry: entries[MaxEntries], Reason: fmt.Sprintf("%d entries, at most %d", len(entries), MaxEntries)}
	}
	a := &Allowlist{entries: append([]string(nil), entries...), names: map[string]bool{}}
	for i, e := range entries {
		bad := func(reason string) error { return &EntryError{Index: i, Entry: e, Reason: reason} }
		switch {
		case e == "":
			return nil, bad("empty")
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, bad("not a CIDR")
			}
			a.prefixes = append(a.prefixes, p.Masked())
		case strings.HasPrefix(e, "*."):
			name, ok := hostName(e[2:])
			if !ok {
				return nil, bad("not a wildcard: after *. a host name")
			}
			a.suffixes = append(a.suffixes, "."+name)
		case strings.Contains(e, "*"):
			return nil, bad("a wildcard is *. before a host name")
		default:
			if ip, err := netip.ParseAddr(e); err == nil {
				if ip.Zone() != "" {
					return nil, bad("an address with a zone")
				}
				ip = ip.Unmap()
				a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			name, ok := hostName(e)
			if !ok {
				return nil, bad("not a host name")
			}
			a.names[name] = true
		}
	}
	return a, nil
}

// Entries is the list as given.
func (a *Allowlist) Entries() []string {
	if a == nil {
		return nil
	}
	return append([]string(nil), a.entries...)
}

// byName: the name (already normalized) is listed or below a wildcard.
func (a *Allowlist) byName(name string) bool {
	if a == nil {
		return false
	}
	if a.names[name] {
		return true
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// byAddr: a CIDR or IP entry holds ip.
func (a *Allowlist) byAddr(ip netip.Addr) bool {
	if a == nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// hasPrefixes: the list has CIDR or IP entries.
func (a *Allowlist) hasPrefixes() bool { return a != nil && len(a.prefixes) > 0 }

// hostName normalizes s as a DNS host name (lower case, no trailing
// dot): labels of letters, digits, '-' and '_', 1 to 63 bytes, not
// beginning or ending with '-', at most 253 bytes in all, the last not
// all digits (that is an IPv4 address's spelling).
func hostName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" {
		return "", false
	}
	return s, true
}
