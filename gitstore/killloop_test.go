package gitstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

const killChildEnv = "GITSTORE_KILL_CHILD"

// TestKillLoopKeepsPacksBounded: a loop of processes on one repository,
// each writing files (every write its own pack, housekeeping at open and
// every few packs, as sessiond runs it) and each killed with SIGKILL
// after a random number of writes, so none closes and none outlives the
// retire delay of its merges. With restarts faster than the delay, and
// with a delay shorter than a few lives, the repository holds at most 50
// packs after every kill, no process merges again what an earlier one
// merged, and at the end git fsck --strict is clean and git cat-file
// reads every acknowledged file.
func TestKillLoopKeepsPacksBounded(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		killChild()
		return
	}
	plainRunOnly(t, "a loop of child processes each writing alone until killed")
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{"restarts faster than the delay", time.Hour},
		{"delay shorter than a few lives", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			killLoop(t, tc.delay, 12)
		})
	}
}

func killLoop(t *testing.T, delay time.Duration, lives int) {
	dir := testrepo.Build(t, "small")
	base := testrepo.Git(t, dir, "rev-parse", "main^{tree}")
	rng := rand.New(rand.NewPCG(uint64(delay), 12))
	type file struct{ tree, path, content string }
	var acked []file
	most := 0
	for life := range lives {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillLoopKeepsPacksBounded$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir, fmt.Sprintf("GITSTORE_KILL_LIFE=%d", life), fmt.Sprintf("GITSTORE_KILL_DELAY=%d", delay), "GITSTORE_KILL_BASE="+base)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		acks := bufio.NewScanner(out)
		want := 8 + rng.IntN(40)
		for range want {
			require.True(t, acks.Scan(), "life %d: the child died", life)
			f := strings.Fields(acks.Text()) // tree path content-index
			require.Len(t, f, 3, "child: %q", acks.Text())
			acked = append(acked, file{f[0], f[1], childContent(life, f[2])})
		}
		require.NoError(t, cmd.Process.Kill()) // SIGKILL, mid-write
		_ = cmd.Wait()
		n := packCount(t, dir)
		most = max(most, n)
		require.LessOrEqual(t, n, 50, "life %d: packs", life)
	}
	t.Logf("%d lives, %d files, at most %d packs after a kill, %d at the end", lives, len(acked), most, packCount(t, dir))

	// One more process finds what its predecessors merged superseded
	// and merges nothing again.
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: delay}})
	require.NoError(t, err)
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	t.Logf("after the loop: %+v", rep)
	rep, err = r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.PacksMerged, "nothing merged twice: %+v", rep)
	if delay < time.Minute {
		// Once the delay has passed, one run deletes every superseded
		// pack, and the next finds nothing to do.
		time.Sleep(delay)
		rep, err = r.Housekeep(t.Context())
		require.NoError(t, err)
		t.Logf("after the delay: %+v", rep)
		rep, err = r.Housekeep(t.Context())
		require.NoError(t, err)
		assert.Zero(t, rep.PacksMerged+rep.PacksDeleted, "%+v", rep)
	}
	require.NoError(t, r.Close())

	var in bytes.Buffer
	for _, f := range acked {
		fmt.Fprintf(&in, "%s:%s\n", f.tree, f.path)
	}
	got := testrepo.GitRaw(t, dir, in.Bytes(), "cat-file", "--batch")
	for _, f := range acked {
		head, rest, ok := bytes.Cut(got, []byte("\n"))
		require.True(t, ok)
		fields := strings.Fields(string(head))
		require.Len(t, fields, 3, "git cat-file %s:%s: %s", f.tree, f.path, head)
		var size int
		fmt.Sscan(fields[2], &size)
		require.Equal(t, f.content, string(rest[:size]), "%s:%s", f.tree, f.path)
		got = rest[size+1:]
	}
	fsck(t, dir)
}

func childContent(life int, i string) string {
	return fmt.Sprintf("life %d write %s\n", life, i)
}

// killChild writes one file per batch until it is killed, printing
// "<tree> <path> <i>" once each is durable.
func killChild() {
	dir := os.Getenv(killChildEnv)
	var life int
	var delay time.Duration
	fmt.Sscan(os.Getenv("GITSTORE_KILL_LIFE"), &life)
	fmt.Sscan(os.Getenv("GITSTORE_KILL_DELAY"), &delay)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: time.Hour, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: delay}})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	base, err := gitstore.ParseOID(os.Getenv("GITSTORE_KILL_BASE"))
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		b := r.NewBatch()
		p := fmt.Sprintf("life%d/d%d/f%d.txt", life, i%4, i)
		tree, err := b.BuildTree(ctx, base, []gitstore.Change{{Path: p, Mode: gitstore.ModeFile, OID: b.AddBlob([]byte(childContent(life, fmt.Sprint(i))))}})
		if err != nil {
			fail(err)
		}
		if err := b.Flush(ctx); err != nil {
			fail(err)
		}
		fmt.Fprintf(out, "%s %s %d\n", tree, p, i)
		out.Flush()
	}
}
