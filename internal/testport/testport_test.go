package testport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreeBelowEphemeral: ports are below the ephemeral range, bindable,
// and never handed out twice.
func TestFreeBelowEphemeral(t *testing.T) {
	top := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p := Free(t)
		assert.GreaterOrEqual(t, p, floor)
		assert.Less(t, p, top)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
	p := Free(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	require.NoError(t, err)
	ln.Close()
}

// TestFreeSkipsListened: a port something listens on is never handed out.
func TestFreeSkipsListened(t *testing.T) {
	var held []net.Listener
	taken := map[int]bool{}
	for p := floor; p < floor+200; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			held = append(held, ln)
			taken[p] = true
		}
	}
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 500 {
		assert.False(t, taken[Free(t)])
	}
}
