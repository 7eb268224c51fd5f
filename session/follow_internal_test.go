package session

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLiveRegistry: a follower made while a command runs gets its start,
// the output still kept (a late joiner is told how many chunks it
// missed), its end, then the next command's start; a follower made
// between commands waits for the next; a session nobody follows and that
// runs nothing is forgotten.
func TestLiveRegistry(t *testing.T) {
	ctx := t.Context()
	var reg liveRegistry
	id := uuid.New()
	follow := func() *ExecFollower { return reg.follow(id) }

	// A follower waiting before the command starts sees all of it.
	early := follow()
	l := reg.start(id, []string{"make"}, nil)
	l.write("stdout", []byte("one\n"))
	c, err := early.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, "start", c.Kind)
	assert.Equal(t, []string{"make"}, c.Argv)
	c, err = early.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, ExecChunk{Kind: "output", Stream: "stdout", Data: []byte("one\n")}, c)

	// Past the bound, the oldest output goes: a late follower is told.
	big := bytes.Repeat([]byte("x"), liveOutputCap/2)
	l.write("stdout", big)
	l.write("stderr", big)
	l.write("stderr", []byte("last\n"))
	late := follow()
	c, err = late.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, "start", c.Kind)
	c, err = late.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, c.Dropped, "the first two chunks are gone")
	assert.Equal(t, "stderr", c.Stream)
	reg.finish(id, l, ExecChunk{ExitCode: 2})
	c, err = late.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, "last\n", string(c.Data))
	c, err = late.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, ExecChunk{Kind: "end", ExitCode: 2}, c)

	// The early follower read everything kept, then the end.
	var all strings.Builder
	for {
		c, err = early.Next(ctx)
		require.NoError(t, err)
		if c.Kind == "end" {
			break
		}
		all.Write(c.Data)
	}
	assert.True(t, strings.HasSuffix(all.String(), "last\n"))

	// Between commands: Next waits, until the next command starts.
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = late.Next(wctx)
	assert.ErrorIs(t, err, context.Canceled, "nothing runs: it waits")
	l2 := reg.start(id, []string{"go", "test"}, nil)
	c, err = late.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"go", "test"}, c.Argv)
	reg.finish(id, l2, ExecChunk{ExitCode: 0})

	early.Close()
	late.Close()
	reg.mu.Lock()
	assert.Empty(t, reg.sessions, "nobody follows, nothing runs: forgotten")
	reg.mu.Unlock()
	l3 := reg.start(id, []string{"true"}, nil)
	reg.finish(id, l3, ExecChunk{})
	reg.mu.Lock()
	assert.Empty(t, reg.sessions)
	reg.mu.Unlock()
}
