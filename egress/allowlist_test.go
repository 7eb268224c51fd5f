package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAllowlistRefusesWhatIsNoEntry(t *testing.T) {
	for _, bad := range []string{"", "*", "*.", "*.*.example.com", "a*.example.com", "https://proxy.golang.org", "proxy.golang.org:443",
		"proxy.golang.org/path", "10.0.0.0/33", "10.0.0/8", "-bad.example.com", "bad-.example.com", "exa mple.com", "10.0.0",
		"fe80::1%eth0", "a..b", strings.Repeat("a", 64) + ".com"} {
		t.Run(bad, func(t *testing.T) {
			_, err := ParseAllowlist([]string{"proxy.golang.org", bad})
			var ee *EntryError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 1, ee.Index)
			assert.Equal(t, bad, ee.Entry)
			assert.Contains(t, err.Error(), "allow[1]")
		})
	}
}

func TestAllowlistMatches(t *testing.T) {
	a, err := ParseAllowlist([]string{"Proxy.Golang.org.", "*.npmjs.org", "10.0.0.0/8", "192.168.1.7", "2001:db8::/32", "localhost"})
	require.NoError(t, err)
	for name, want := range map[string]bool{
		"proxy.golang.org": true, "sum.golang.org": false, "registry.npmjs.org": true, "a.b.npmjs.org": true,
		"npmjs.org": false, "evilnpmjs.org": false, "localhost": true,
	} {
		assert.Equal(t, want, a.byName(name), name)
	}
	for ip, want := range map[string]bool{
		"10.1.2.3": true, "11.0.0.1": false, "192.168.1.7": true, "192.168.1.8": false, "::ffff:10.0.0.1": true,
		"2001:db8::1": true, "2001:db9::1": false,
	} {
		assert.Equal(t, want, a.byAddr(netip.MustParseAddr(ip)), ip)
	}
	assert.Equal(t, []string{"Proxy.Golang.org.", "*.npmjs.org", "10.0.0.0/8", "192.168.1.7", "2001:db8::/32", "localhost"}, a.Entries())

	var none Allowlist
	assert.False(t, none.byName("localhost"))
	assert.False(t, none.byAddr(netip.MustParseAddr("127.0.0.1")))
}
