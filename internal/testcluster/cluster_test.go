package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testport"
	"github.com/sessiond/sessiond/internal/testrepo"
)

func TestMain(m *testing.M) { testdaemon.Main(m, "../../cmd/sessiond") }

// change starts a session on node's repository app from main, writes
// path, and submits it as a changeset onto main.
func change(t *testing.T, c *client.Client, path, content string) apitypes.Changeset {
	t.Helper()
	ctx := t.Context()
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main", AgentName: "agent " + path})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, s.ID, path, []byte(content), client.WriteOptions{})
	require.NoError(t, err)
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "add " + path, TargetBranch: "main"})
	require.NoError(t, err)
	return cs
}

// TestOriginAcceptsPushed: two nodes register one git:// origin, each
// with its own clone; an accept on each is pushed to the origin, and a
// git push made there between them is kept: the branch's history is
// linear, each accept on top of what was there. An undo is pushed too.
func TestOriginAcceptsPushed(t *testing.T) {
	ctx := t.Context()
	origin := NewOrigin(t, "small")
	base := origin.Head(t, "main")
	c := New(t, 2, "--repo", "app="+origin.URL)
	n1, n2 := c.Nodes[0], c.Nodes[1]

	for _, n := range c.Nodes {
		rp, err := n.C.GetRepo(ctx, "app")
		require.NoError(t, err)
		assert.Equal(t, origin.URL, rp.Origin)
		assert.True(t, strings.HasPrefix(rp.Path, n.DataDir), "each node's own clone: %s", rp.Path)
	}
	// Both sessions start from the same base, before anything moves.
	cs1 := change(t, n1.C, "from-one.txt", "one\n")
	cs2 := change(t, n2.C, "from-two.txt", "two\n")

	// Asked of the other node while the session's owner lives, the
	// accept is forwarded to the owner.
	a1, err := n2.C.Accept(ctx, cs1.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	// A changeset's diff reads on any node: its commits come from the
	// store.
	d, err := n2.C.ChangesetDiff(ctx, cs1.ID)
	require.NoError(t, err)
	assert.Contains(t, string(d), "+one")
	assert.Equal(t, a1.Commit, origin.Head(t, "main"), "the accept is on the origin")
	_, err = origin.Run("fsck", "--strict", "--no-dangling")
	require.NoError(t, err)

	// Someone pushes to the origin directly.
	work := t.TempDir()
	testrepo.Git(t, work, "clone", "-q", origin.URL, ".")
	require.NoError(t, os.WriteFile(filepath.Join(work, "theirs.txt"), []byte("theirs\n"), 0o644))
	testrepo.Git(t, work, "add", "theirs.txt")
	testrepo.Git(t, work, "commit", "-q", "-m", "theirs")
	testrepo.Git(t, work, "push", "-q", "origin", "main")
	theirs := strings.TrimSpace(testrepo.Git(t, work, "rev-parse", "HEAD"))

	// Node 2 never saw either: its accept lands on top of both.
	a2, err := n2.C.Accept(ctx, cs2.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	assert.True(t, a2.Rebased)
	assert.Equal(t, a2.Commit, origin.Head(t, "main"))
	chain, err := origin.Run("rev-list", "--parents", "main")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(chain), "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Equal(t, []string{a2.Commit, theirs}, strings.Fields(lines[0]), "accept 2 on theirs")
	assert.Equal(t, []string{theirs, a1.Commit}, strings.Fields(lines[1]), "theirs on accept 1")
	assert.Equal(t, []string{a1.Commit, base}, strings.Fields(lines[2]), "accept 1 on the base")
	for _, l := range lines {
		assert.LessOrEqual(t, len(strings.Fields(l)), 2, "linear: no merge commit in %q", l)
	}
	for _, f := range []string{"from-one.txt", "from-two.txt", "theirs.txt"} {
		_, err := origin.Run("cat-file", "-e", "main:"+f)
		assert.NoError(t, err, "%s is on the origin's main", f)
	}
	_, err = origin.Run("fsck", "--strict", "--no-dangling")
	require.NoError(t, err)

	// An undo, from the other node than the accept's, is pushed as well.
	u, err := n2.C.Undo(ctx, cs1.ID, apitypes.UndoRequest{})
	require.NoError(t, err)
	assert.Equal(t, u.Commit, origin.Head(t, "main"))
	_, err = origin.Run("cat-file", "-e", "main:from-one.txt")
	assert.Error(t, err, "the undone file is gone from the origin's main")
	_, err = origin.Run("cat-file", "-e", "main:from-two.txt")
	assert.NoError(t, err)

	// A session on a node whose clone lacks the branch's head fetches it.
	s, err := n1.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: u.Commit})
	require.NoError(t, err)
	assert.Equal(t, u.Commit, s.BaseCommit)
}

// TestOriginSingleNode: a single daemon (embedded store) registers an
// origin by --repo and by the API; an origin it cannot fetch is 400
// naming the URL without credentials, and nothing is registered or left
// on disk.
func TestOriginSingleNode(t *testing.T) {
	ctx := t.Context()
	origin := NewOrigin(t, "small")
	d := testdaemon.New(t, "", "--repo", "app="+origin.URL)
	rp, err := d.C.GetRepo(ctx, "app")
	require.NoError(t, err)
	assert.Equal(t, origin.URL, rp.Origin)
	cs := change(t, d.C, "single.txt", "single\n")
	a, err := d.C.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	assert.Equal(t, a.Commit, origin.Head(t, "main"))

	rp, err = d.C.CreateRepo(ctx, apitypes.CreateRepoRequest{Name: "second", Origin: origin.URL})
	require.NoError(t, err)
	assert.Equal(t, origin.URL, rp.Origin)

	gone := "git://127.0.0.1:" + strconv.Itoa(testport.Free(t)) + "/none.git"
	for _, tc := range []struct{ origin, want string }{
		{gone, gone},
		{"https://agent:s3cret@127.0.0.1:1/app.git", "password in the URL"},
		{"ftp://127.0.0.1/app.git", "want an https://"},
	} {
		_, err := d.C.CreateRepo(ctx, apitypes.CreateRepoRequest{Name: "bad", Origin: tc.origin})
		var ae *client.Error
		require.True(t, errors.As(err, &ae), "%v", err)
		assert.Equal(t, http.StatusBadRequest, ae.Status)
		assert.Contains(t, ae.Message, tc.want)
		assert.NotContains(t, ae.Message, "s3cret")
		_, err = d.C.GetRepo(ctx, "bad")
		require.True(t, errors.As(err, &ae))
		assert.Equal(t, http.StatusNotFound, ae.Status, "nothing registered")
		_, err = os.Stat(filepath.Join(d.DataDir, "clones", "bad.git"))
		assert.True(t, os.IsNotExist(err), "no clone left")
	}
	left, err := os.ReadDir(filepath.Join(d.DataDir, "clones"))
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"app.git", "second.git"}, names, "no debris of failed clones")
}

// TestNodeIDNeedsPostgres: a cluster needs PostgreSQL; the embedded store
// refuses --node-id at start-up, naming why.
func TestNodeIDNeedsPostgres(t *testing.T) {
	code, stderr := Refused(t, 30*time.Second, "--addr", "127.0.0.1:0", "--node-id", "a", "--advertise-url", "http://127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--node-id")
	assert.Contains(t, stderr, "PostgreSQL")
}

// TestNodeWithOtherKeysRefused: a node whose data directory holds keys
// of its own (not the cluster's) refuses to join, naming the key, so no
// token another node made is refused by it later; with the cluster's
// keys the same node joins.
func TestNodeWithOtherKeysRefused(t *testing.T) {
	c := appCluster(t, 1, "--admin-token", "cluster-admin")
	var port int
	args := append([]string{"--database-url", c.DBURL}, c.NodeArgs("node-2", &port)...)
	code, stderr := Refused(t, 60*time.Second, args...)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "token.key is not the cluster's")
	assert.Contains(t, stderr, "node-1", "names the node that brought the cluster's key")

	// With the cluster's keys it joins, and a session token node-1 made
	// works through node-2, as does node-2's on node-1.
	n2 := c.Add("node-2")
	s, err := c.Nodes[0].C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "app", Base: "main"})
	require.NoError(t, err)
	require.NotEmpty(t, s.Token)
	_, err = client.New(n2.URL, s.Token).WriteFile(t.Context(), s.ID, "by-token.txt", []byte("t\n"), client.WriteOptions{})
	require.NoError(t, err, "node-1's session token through node-2")
	s2, err := n2.C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "app", Base: "main"})
	require.NoError(t, err)
	got, _, err := client.New(c.Nodes[0].URL, s2.Token).ReadFile(t.Context(), s2.ID, "README.md")
	require.NoError(t, err, "node-2's session token on node-1")
	assert.NotEmpty(t, got)
}

// TestDuplicateLiveNodeRefused: a second process with a live node's id
// refuses to start, naming the live node; once that node stopped, the id
// joins again.
func TestDuplicateLiveNodeRefused(t *testing.T) {
	c := New(t, 1)
	n1 := c.Nodes[0]
	var port int
	args := append([]string{"--database-url", c.DBURL}, c.NodeArgs("node-1", &port)...)
	code, stderr := RefusedIn(t, c.DataDir(), 60*time.Second, args...)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "node-1")
	assert.Contains(t, stderr, "a live node already has this id")
	assert.Contains(t, stderr, n1.URL, "names where the live one is")

	n1.Stop()
	again := c.Add("node-1")
	st, err := again.C.Cluster(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Nodes, 1)
	assert.Equal(t, "live", st.Nodes[0].Health)
	assert.Equal(t, again.URL, st.Nodes[0].AdvertiseURL)
}

// TestClusterStatus: GET /v1/cluster lists the three nodes live, with a
// metric per node; a node killed with SIGKILL goes dead to the others
// after its lease, and they stay live.
func TestClusterStatus(t *testing.T) {
	ctx := t.Context()
	c := New(t, 3, "--node-heartbeat", "200ms", "--node-lease", "2s")
	st, err := c.Nodes[0].C.Cluster(ctx)
	require.NoError(t, err)
	assert.True(t, st.Enabled)
	assert.Equal(t, "node-1", st.Self)
	assert.Equal(t, 2.0, st.LeaseSeconds)
	require.Len(t, st.Nodes, 3)
	for i, n := range st.Nodes {
		assert.Equal(t, c.Nodes[i].ID, n.ID)
		assert.Equal(t, c.Nodes[i].URL, n.AdvertiseURL)
		assert.Equal(t, "live", n.Health)
		assert.NotEmpty(t, n.Version)
	}
	metrics := scrape(t, c.Nodes[1].URL)
	for _, id := range []string{"node-1", "node-2", "node-3"} {
		assert.Contains(t, metrics, `sessiond_cluster_node_live{node="`+id+`"} 1`)
	}

	c.Nodes[2].Kill()
	var last apitypes.ClusterStatus
	require.Eventually(t, func() bool {
		st, err := c.Nodes[0].C.Cluster(ctx)
		if err != nil || len(st.Nodes) != 3 {
			return false
		}
		last = st
		return st.Nodes[2].Health == "dead"
	}, 30*time.Second, 100*time.Millisecond, "node-3 never went dead")
	assert.Greater(t, last.Nodes[2].HeartbeatAgeSeconds, last.LeaseSeconds)
	assert.Equal(t, "live", last.Nodes[0].Health)
	assert.Equal(t, "live", last.Nodes[1].Health)
	assert.Contains(t, scrape(t, c.Nodes[1].URL), `sessiond_cluster_node_live{node="node-3"} 0`)
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestConcurrentAcceptsAcrossNodes: changesets of sessions on three nodes
// accepted onto one branch at once, each by its session's node (the only
// one that has the session's objects until they live in the store), with
// a git push to the origin among them: every accept lands (or is a 409,
// none here: the changes do not conflict), nothing is lost, each is
// recorded once, and the origin's history is linear.
func TestConcurrentAcceptsAcrossNodes(t *testing.T) {
	ctx := t.Context()
	origin := NewOrigin(t, "small")
	c := New(t, 3, "--repo", "app="+origin.URL)
	const perNode = 3
	type job struct {
		cs   apitypes.Changeset
		via  *client.Client
		file string
	}
	var jobs []job
	for i, n := range c.Nodes {
		for k := range perNode {
			file := "n" + strconv.Itoa(i) + "-" + strconv.Itoa(k) + ".txt"
			jobs = append(jobs, job{cs: change(t, n.C, file, file+"\n"), via: n.C, file: file})
		}
	}
	work := t.TempDir()
	testrepo.Git(t, work, "clone", "-q", origin.URL, ".")
	require.NoError(t, os.WriteFile(filepath.Join(work, "pushed.txt"), []byte("pushed\n"), 0o644))
	testrepo.Git(t, work, "add", "pushed.txt")
	testrepo.Git(t, work, "commit", "-q", "-m", "pushed among the accepts")

	errs := make(chan error, len(jobs)+1)
	commits := make(chan string, len(jobs))
	for _, j := range jobs {
		go func() {
			a, err := j.via.Accept(ctx, j.cs.ID, apitypes.AcceptRequest{})
			if err == nil {
				commits <- a.Commit
			}
			errs <- err
		}()
	}
	go func() {
		// The push retries as a person would when an accept got there first.
		var err error
		for range 20 {
			if _, err = gitIn(work, "push", "-q", "origin", "main"); err == nil {
				break
			}
			if _, err = gitIn(work, "pull", "-q", "--rebase", "origin", "main"); err != nil {
				break
			}
		}
		errs <- err
	}()
	for range len(jobs) + 1 {
		assert.NoError(t, <-errs)
	}
	close(commits)
	head := origin.Head(t, "main")
	chain, err := origin.Run("rev-list", "--parents", "main")
	require.NoError(t, err)
	onMain := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(chain), "\n") {
		f := strings.Fields(l)
		assert.LessOrEqual(t, len(f), 2, "linear: no merge commit in %q", l)
		onMain[f[0]] = true
	}
	n := 0
	for cm := range commits {
		n++
		assert.True(t, onMain[cm], "accepted commit %s is on the origin's main", cm)
	}
	assert.Equal(t, len(jobs), n)
	for _, j := range jobs {
		_, err := origin.Run("cat-file", "-e", head+":"+j.file)
		assert.NoError(t, err, "%s is on main", j.file)
	}
	_, err = origin.Run("cat-file", "-e", head+":pushed.txt")
	assert.NoError(t, err, "the push is kept")
	layers, err := c.Nodes[0].C.Layers(ctx, "app", "main")
	require.NoError(t, err)
	assert.Len(t, layers, len(jobs), "one layer per accept, recorded once")
	_, err = origin.Run("fsck", "--strict", "--no-dangling")
	require.NoError(t, err)
}

func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestSessionOwnership: a session belongs to the node that created it;
// a write to it through another node is forwarded to the owner, which
// stays the owner; once the owner stopped (its leases released), the
// other node takes the session over and its writes go through.
func TestSessionOwnership(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	_, err := n1.C.WriteFile(ctx, s.ID, "mine.txt", []byte("mine\n"), client.WriteOptions{})
	require.NoError(t, err)

	_, err = n2.C.WriteFile(ctx, s.ID, "via-two.txt", []byte("via two\n"), client.WriteOptions{})
	require.NoError(t, err, "forwarded to the owner")
	assert.Equal(t, "node-1", c.owner(t, s.ID))
	ms, err := n1.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, ms, 2)

	n1.Stop()
	_, err = n2.C.WriteFile(ctx, s.ID, "theirs.txt", []byte("theirs\n"), client.WriteOptions{})
	require.NoError(t, err, "taken over after the owner released it")
	assert.Equal(t, "node-2", c.owner(t, s.ID))
	ms, err = n2.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, ms, 3)
}

// TestPausedOwnerFenced: an owner paused (SIGSTOP) past its lease loses
// its session to the node that writes to it next (a request forwarded to
// the paused owner is given up on with 503 once its lease ran out, and
// the retry is taken over); woken (SIGCONT), the old owner serves the
// session no more: a write through it goes to the new owner.
func TestPausedOwnerFenced(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2, "--node-heartbeat", "200ms", "--node-lease", "2s")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	_, err := n1.C.WriteFile(ctx, s.ID, "before.txt", []byte("before\n"), client.WriteOptions{})
	require.NoError(t, err)

	pauseUntilTaken(t, n1, n2, s.ID)()

	_, err = n1.C.WriteFile(ctx, s.ID, "late.txt", []byte("late\n"), client.WriteOptions{})
	require.NoError(t, err, "forwarded to the new owner")
	assert.Equal(t, "node-2", c.owner(t, s.ID))

	ms, err := n2.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	var paths []string
	for _, m := range ms {
		paths = append(paths, m.Paths...)
	}
	assert.Equal(t, []string{"before.txt", "taken.txt", "late.txt"}, paths, "the late write recorded by the new owner")
}

// TestPeriodicFetch: a push to the origin reaches a node's clone by the
// periodic fetch, without any request asking for it.
func TestPeriodicFetch(t *testing.T) {
	ctx := t.Context()
	origin := NewOrigin(t, "small")
	d := testdaemon.New(t, "", "--repo", "app="+origin.URL, "--fetch-interval", "200ms")
	work := t.TempDir()
	testrepo.Git(t, work, "clone", "-q", origin.URL, ".")
	testrepo.Git(t, work, "commit", "-q", "--allow-empty", "-m", "pushed")
	testrepo.Git(t, work, "push", "-q", "origin", "main:main", "main:refs/heads/fetched")
	pushed := strings.TrimSpace(testrepo.Git(t, work, "rev-parse", "HEAD"))
	require.Eventually(t, func() bool {
		bs, err := d.C.Branches(ctx, "app")
		if err != nil {
			return false
		}
		got := map[string]string{}
		for _, b := range bs {
			got[b.Name] = b.Commit
		}
		return got["main"] == pushed && got["fetched"] == pushed
	}, 30*time.Second, 100*time.Millisecond, "the clone never saw the push")
}

// TestNodesStartTogether: three nodes started at once with the same
// --repo origin all start (one registers it, the others find it).
func TestNodesStartTogether(t *testing.T) {
	origin := NewOrigin(t, "small")
	c := &Cluster{T: t, DBURL: pgtest.FreshSchema(t), Args: []string{"--repo", "app=" + origin.URL}}
	var wg sync.WaitGroup
	nodes := make([]*Node, 3)
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd := &Node{ID: "node-" + strconv.Itoa(i+1)}
			nd.Daemon = testdaemon.NewIn(t, c.DataDir(), c.DBURL, c.NodeArgs(nd.ID, &nd.Port)...)
			nodes[i] = nd
		}()
	}
	wg.Wait()
	for _, nd := range nodes {
		require.NotNil(t, nd.Daemon, "%s started", nd.ID)
		rp, err := nd.C.GetRepo(t.Context(), "app")
		require.NoError(t, err)
		assert.Equal(t, origin.URL, rp.Origin)
	}
}

// TestLostOwnerKillsItsCommand: an owner paused past its lease, whose
// session another node took meanwhile, kills the command it was running
// on that session as soon as it wakes and finds the lease gone.
func TestLostOwnerKillsItsCommand(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2, "--node-heartbeat", "200ms", "--node-lease", "2s")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	const marker = "297.31"
	go func() {
		_, _ = n1.C.Exec(context.WithoutCancel(ctx), s.ID, apitypes.ExecRequest{Argv: []string{"sleep", marker}, TimeoutSeconds: 600}, nil)
	}()
	running := func() bool {
		dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, d := range dirs {
			if b, err := os.ReadFile(d); err == nil && string(b) == "sleep\x00"+marker+"\x00" {
				return true
			}
		}
		return false
	}
	require.Eventually(t, running, 30*time.Second, 50*time.Millisecond, "the command never started")

	resume := pauseUntilTaken(t, n1, n2, s.ID)
	assert.True(t, running(), "the paused owner's command still runs before it wakes")
	resume()
	require.Eventually(t, func() bool { return !running() }, 30*time.Second, 100*time.Millisecond,
		"the old owner kept running its command on a session it lost")
	assert.Equal(t, "node-2", c.owner(t, s.ID))
}

// appCluster starts n nodes, each with args, serving a fresh origin of
// the small fixture as the repository "app".
func appCluster(t *testing.T, n int, args ...string) *Cluster {
	t.Helper()
	origin := NewOrigin(t, "small")
	return New(t, n, append([]string{"--repo", "app=" + origin.URL}, args...)...)
}

// newSession creates a session on app's main through nd.
func newSession(t testing.TB, nd *Node) apitypes.Session {
	t.Helper()
	s, err := nd.C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "app", Base: "main"})
	require.NoError(t, err)
	return s
}

// pauseUntilTaken pauses owner (SIGSTOP) and writes taken.txt to session
// id through taker until the write goes through: refused while owner's
// lease lives, taken over once it expired. The returned func wakes owner
// (SIGCONT); a test that ends before calling it has owner woken then.
func pauseUntilTaken(t *testing.T, owner, taker *Node, id string) (resume func()) {
	t.Helper()
	pid := owner.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	var once sync.Once
	resume = func() { once.Do(func() { require.NoError(t, syscall.Kill(pid, syscall.SIGCONT)) }) }
	t.Cleanup(func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) })
	require.Eventually(t, func() bool {
		_, err := taker.C.WriteFile(t.Context(), id, "taken.txt", []byte("taken\n"), client.WriteOptions{})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "%s never took the session over", taker.ID)
	return resume
}
