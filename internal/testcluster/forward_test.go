package testcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testport"
)

// owner is the node the store names as session id's owner.
func (c *Cluster) owner(t *testing.T, id string) string {
	t.Helper()
	var node string
	c.queryRow(t, &node, `SELECT node_id FROM session_owners WHERE session_id = $1`, id)
	return node
}

// queryRow scans the one row query returns (one column) into dest,
// asked of the cluster's database directly.
func (c *Cluster) queryRow(t *testing.T, dest any, query string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DBURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(ctx, query, args...).Scan(dest))
}

// outcome is what the end-to-end workflow observed, comparable between a
// cluster and a single daemon.
type outcome struct {
	Read        string
	ExecOut     string
	ExecCode    int
	Streamed    string
	Mutations   []string
	Checkpoint  int
	Files       []string
	DiffHasBoth bool
	Accepted    string // the tree of the origin's main after the accept
}

// workflow drives one session through create, write, read, exec (its
// output streamed), checkpoint, submit and accept, the i-th request
// through via(i).
func workflow(t *testing.T, origin *Origin, via func(i int) *client.Client) outcome {
	t.Helper()
	ctx := t.Context()
	var o outcome
	i := 0
	next := func() *client.Client { i++; return via(i - 1) }
	s, err := next().CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main", AgentName: "rr"})
	require.NoError(t, err)
	_, err = next().WriteFile(ctx, s.ID, "docs/rr.txt", []byte("round robin\n"), client.WriteOptions{})
	require.NoError(t, err)
	b, _, err := next().ReadFile(ctx, s.ID, "docs/rr.txt")
	require.NoError(t, err)
	o.Read = string(b)
	var mu sync.Mutex
	var streamed strings.Builder
	res, err := next().Exec(ctx, s.ID, apitypes.ExecRequest{Command: "cat docs/rr.txt; echo made > made.txt; echo second line"},
		func(stream string, data []byte) {
			mu.Lock()
			defer mu.Unlock()
			if stream == "stdout" {
				streamed.Write(data)
			}
		})
	require.NoError(t, err)
	o.ExecOut, o.ExecCode, o.Streamed = res.Stdout, res.ExitCode, streamed.String()
	cp, err := next().Checkpoint(ctx, s.ID, "after exec", "")
	require.NoError(t, err)
	o.Checkpoint = cp.N
	ms, err := next().Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	for _, m := range ms {
		o.Mutations = append(o.Mutations, m.Op+":"+strings.Join(m.Paths, ",")+":"+strings.Join(m.New, ","))
	}
	tree, err := next().Tree(ctx, s.ID, client.TreeOptions{Recursive: true})
	require.NoError(t, err)
	for _, f := range tree {
		o.Files = append(o.Files, f.Path)
	}
	d, err := next().Diff(ctx, s.ID, "")
	require.NoError(t, err)
	o.DiffHasBoth = strings.Contains(string(d), "docs/rr.txt") && strings.Contains(string(d), "made.txt")
	cs, err := next().Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "round robin", TargetBranch: "main"})
	require.NoError(t, err)
	a, err := next().Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	require.Equal(t, a.Commit, origin.Head(t, "main"), "the accept is on the origin")
	out, err := origin.Run("rev-parse", "main^{tree}")
	require.NoError(t, err)
	o.Accepted = strings.TrimSpace(out)
	return o
}

// TestRoundRobinSameAsOneNode: one session's requests sent round-robin
// to three nodes (each forwarded to the owner when it is not) give what
// a single daemon gives, down to the tree accepted onto the origin.
func TestRoundRobinSameAsOneNode(t *testing.T) {
	single := NewOrigin(t, "small")
	one := New(t, 1, "--repo", "app="+single.URL)
	want := workflow(t, single, func(int) *client.Client { return one.Nodes[0].C })

	origin := NewOrigin(t, "small")
	c := New(t, 3, "--repo", "app="+origin.URL)
	got := workflow(t, origin, func(i int) *client.Client { return c.Nodes[i%3].C })
	assert.Equal(t, want, got)
	assert.Equal(t, "round robin\n", got.Read)
	assert.Equal(t, "round robin\nsecond line\n", got.Streamed, "the exec's output streamed through the forwarding node")
	assert.True(t, got.DiffHasBoth)
}

// TestEventsAcrossNodes: a stream of a repository's events on one node
// sees, as they happen, the events of a session another node owns (woken
// by the store's notifications, not by a local write); a session's event
// stream (SSE) asked of a node that does not own it is forwarded and
// follows it live.
func TestEventsAcrossNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := appCluster(t, 3)
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	s := newSession(t, n1)

	repoEvs, err := n2.C.RepoEvents(ctx, "app", 0)
	require.NoError(t, err)
	sessEvs, err := n3.C.SessionEvents(ctx, s.ID, 0)
	require.NoError(t, err)
	// Whatever is in the log already, then the new write's event.
	for k := range 3 {
		p := fmt.Sprintf("live-%d.txt", k)
		_, err = n1.C.WriteFile(ctx, s.ID, p, []byte(p), client.WriteOptions{})
		require.NoError(t, err)
		for name, ch := range map[string]<-chan apitypes.Event{"repository stream on node-2": repoEvs, "session SSE through node-3": sessEvs} {
			waitFor(t, ch, name, func(e apitypes.Event) bool {
				pl, _ := e.Payload.(map[string]any)
				return e.Type == "file.written" && pl["path"] == p
			})
		}
	}
}

func waitFor(t *testing.T, ch <-chan apitypes.Event, name string, ok func(apitypes.Event) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e, open := <-ch:
			require.True(t, open, "%s ended", name)
			if ok(e) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: the event never came", name)
		}
	}
}

// TestForwardLoopRefused: a request that comes back to a node it passed
// is refused with 508 naming the hops, and nothing is written.
func TestForwardLoopRefused(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n2)
	// As if node-2 had forwarded it to node-1, which sends it back.
	req, err := http.NewRequestWithContext(ctx, "PUT", n1.URL+"/v1/sessions/"+s.ID+"/files/loop.txt", strings.NewReader("loop\n"))
	require.NoError(t, err)
	req.Header.Set(api.HopHeader, "node-2")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusLoopDetected, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), apitypes.CodeLoopDetected)
	assert.Contains(t, string(body), "node-2, node-1")
	ms, err := n2.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms, "nothing written")
}

// TestUnreachableOwner: a node whose advertised URL nobody answers at
// publishes its heartbeat, but a request for one of its sessions through
// another node is 503 unavailable naming it and the URL.
func TestUnreachableOwner(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 1)
	bad := fmt.Sprintf("http://127.0.0.1:%d", testport.Free(t))
	n2 := c.Add("node-2", "--advertise-url", bad)
	st, err := c.Nodes[0].C.Cluster(ctx)
	require.NoError(t, err)
	require.Len(t, st.Nodes, 2)
	assert.Equal(t, bad, st.Nodes[1].AdvertiseURL)
	assert.Equal(t, "live", st.Nodes[1].Health)

	s := newSession(t, n2)
	_, err = c.Nodes[0].C.WriteFile(ctx, s.ID, "x.txt", []byte("x\n"), client.WriteOptions{})
	var ae *client.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, ae.Status)
	assert.Equal(t, apitypes.CodeUnavailable, ae.Code)
	assert.Contains(t, ae.Message, `"node-2"`)
	assert.Contains(t, ae.Message, bad)
	ms, err := n2.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms, "nothing written")
}

// TestTakeoverOfDeadOwner: the owner killed, a request for its session
// through another node is 503 while the lease lives, and once it expired
// that node takes the session over and answers.
func TestTakeoverOfDeadOwner(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 3, "--node-heartbeat", "200ms", "--node-lease", "2s")
	s := newSession(t, c.Nodes[0])
	c.Nodes[0].Kill()
	var sawUnavailable bool
	require.Eventually(t, func() bool {
		_, err := c.Nodes[1].C.WriteFile(ctx, s.ID, "after.txt", []byte("after\n"), client.WriteOptions{})
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
			sawUnavailable = true
		}
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "node-2 never took the session over")
	assert.True(t, sawUnavailable, "refused while the dead owner's lease lived")
	assert.Equal(t, "node-2", c.owner(t, s.ID))
	b, _, err := c.Nodes[2].C.ReadFile(ctx, s.ID, "after.txt")
	require.NoError(t, err, "read through node-3, forwarded to the new owner")
	assert.Equal(t, "after\n", string(b))
}

// TestBalancedPlacement: with balanced placement a session created
// through a node busy with a command is created on the idle node (the
// create forwarded); with local placement it stays where it was asked.
func TestBalancedPlacement(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2, "--placement", "balanced", "--node-heartbeat", "200ms", "--node-lease", "2s")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	busy := newSession(t, n1)
	assert.Equal(t, "node-1", c.owner(t, busy.ID), "a tie stays on the node asked")
	done := make(chan error, 1)
	go func() {
		_, err := n1.C.Exec(ctx, busy.ID, apitypes.ExecRequest{Command: "sleep 3", TimeoutSeconds: 30}, nil)
		done <- err
	}()
	require.Eventually(t, func() bool {
		st, err := n2.C.Cluster(ctx)
		return err == nil && st.Nodes[0].RunningCommands == 1
	}, 10*time.Second, 50*time.Millisecond, "node-1's running command never showed")
	s := newSession(t, n1)
	assert.Equal(t, "node-2", c.owner(t, s.ID), "placed on the idle node")
	_, err := n1.C.WriteFile(ctx, s.ID, "placed.txt", []byte("placed\n"), client.WriteOptions{})
	require.NoError(t, err, "and served from there through node-1")
	require.NoError(t, <-done)
}

// TestDrainRollingRestart: draining a node (asked of another node)
// hands its sessions off at once, without waiting for their leases: the
// next request for each is served by another node, which owns it from
// then on, with the files the drained node wrote; the drained node
// places new sessions elsewhere and shows draining. A rolling restart
// (drain, stop, start, for each node) loses nothing acknowledged.
func TestDrainRollingRestart(t *testing.T) {
	ctx := t.Context()
	// A lease far longer than the test: only a hand-off can move them.
	c := appCluster(t, 2, "--node-lease", "10m")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	var ids []string
	for k := range 3 {
		s := newSession(t, n1)
		_, err := n1.C.WriteFile(ctx, s.ID, "before.txt", []byte(fmt.Sprintf("before %d\n", k)), client.WriteOptions{})
		require.NoError(t, err)
		ids = append(ids, s.ID)
	}
	res, err := n2.C.DrainNode(ctx, "node-1", apitypes.DrainRequest{TimeoutSeconds: 10})
	require.NoError(t, err)
	assert.Equal(t, "node-1", res.Node)
	assert.ElementsMatch(t, ids, res.HandedOff)
	assert.Empty(t, res.Kept)
	st, err := n2.C.Cluster(ctx)
	require.NoError(t, err)
	assert.True(t, st.Nodes[0].Draining)
	assert.False(t, st.Nodes[1].Draining)

	for _, id := range ids {
		// Through the drained node too: it takes nothing back.
		_, err := n1.C.WriteFile(ctx, id, "moved.txt", []byte("moved\n"), client.WriteOptions{})
		require.NoError(t, err)
		assert.Equal(t, "node-2", c.owner(t, id))
	}
	s := newSession(t, n1)
	assert.Equal(t, "node-2", c.owner(t, s.ID), "a drained node places new sessions elsewhere")

	// The rolling restart: node-1 stops and starts (undrained), then
	// node-2 is drained and stopped; everything reads back on node-1.
	n1.Stop()
	n1.Start()
	res, err = n1.C.DrainNode(ctx, "node-2", apitypes.DrainRequest{TimeoutSeconds: 10})
	require.NoError(t, err)
	assert.Len(t, res.HandedOff, len(ids)+1)
	n2.Stop()
	for k, id := range ids {
		b, _, err := n1.C.ReadFile(ctx, id, "before.txt")
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("before %d\n", k), string(b), "written before the first drain")
		b, _, err = n1.C.ReadFile(ctx, id, "moved.txt")
		require.NoError(t, err)
		assert.Equal(t, "moved\n", string(b), "written between the drains")
		assert.Equal(t, "node-1", c.owner(t, id))
	}
}

// TestOverlapAcrossNodes: two sessions on two nodes that change one file
// are warned of each other, as two sessions on one node are.
func TestOverlapAcrossNodes(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s1, err := n1.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main", AgentName: "one"})
	require.NoError(t, err)
	s2, err := n2.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "app", Base: "main", AgentName: "two"})
	require.NoError(t, err)
	_, err = n1.C.WriteFile(ctx, s1.ID, "shared.go", []byte("package app\n\nfunc One() int { return 1 }\n"), client.WriteOptions{})
	require.NoError(t, err)
	_, err = n2.C.WriteFile(ctx, s2.ID, "shared.go", []byte("package app\n\nfunc One() int { return 2 }\n"), client.WriteOptions{})
	require.NoError(t, err)
	for _, x := range []struct{ self, other string }{{s1.ID, s2.ID}, {s2.ID, s1.ID}} {
		require.Eventually(t, func() bool {
			evs, err := n1.C.EventList(ctx, x.self, 0, 100, "overlap.detected")
			if err != nil {
				return false
			}
			for _, e := range evs {
				pl, _ := e.Payload.(map[string]any)
				if pl["other"] == x.other && pl["path"] == "shared.go" {
					return true
				}
			}
			return false
		}, 20*time.Second, 100*time.Millisecond, "session %s was never warned of %s", x.self, x.other)
	}
}

// sessiond runs the client with args against server and returns its
// exit code and standard output.
func sessiond(t *testing.T, server string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), testdaemon.Binary, append([]string{"--server", server}, args...)...)
	cmd.Env = append(os.Environ(), "SESSIOND_TOKEN=", "SESSIOND_SERVER=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stdout.String(), stderr.String()
}

// TestNodeCLI: `sessiond node ls` lists the nodes; `sessiond node drain`
// drains the node --server reaches (or the one named), and says so; a
// daemon that is no cluster has nothing to drain to (exit 2).
func TestNodeCLI(t *testing.T) {
	c := appCluster(t, 2)
	s := newSession(t, c.Nodes[1])
	code, out, errOut := sessiond(t, c.Nodes[0].URL, "node", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "node-1")
	assert.Contains(t, out, "node-2")
	code, out, errOut = sessiond(t, c.Nodes[0].URL, "node", "drain", "node-2", "--timeout", "5s")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "drained node node-2: 1 sessions handed off, 0 kept")
	code, out, errOut = sessiond(t, c.Nodes[0].URL, "--json", "node", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"draining": true`)
	_, err := c.Nodes[0].C.WriteFile(t.Context(), s.ID, "x.txt", []byte("x\n"), client.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "node-1", c.owner(t, s.ID))

	d := testdaemon.New(t, "")
	code, _, errOut = sessiond(t, d.URL, "node", "drain")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no node of a cluster")
}

// echoPy answers GET with its path, and after a WebSocket upgrade (101)
// echoes every byte back.
const echoPy = `import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:
                b = self.rfile.read1(4096)
                if not b:
                    break
                self.wfile.write(b)
                self.wfile.flush()
            self.close_connection = True
            return
        body = ("echo %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", 8080), H).serve_forever()
`

// startEcho writes echoPy into session id through nd and starts it as the
// service "echo" on port 8080, ready once it answers.
func startEcho(t *testing.T, nd *Node, id string) {
	t.Helper()
	_, err := nd.C.WriteFile(t.Context(), id, "echo.py", []byte(echoPy), client.WriteOptions{})
	require.NoError(t, err)
	port := 8080
	_, err = nd.C.StartService(t.Context(), id, apitypes.ServiceRequest{Name: "echo", Argv: []string{"python3", "echo.py"}, Port: &port,
		Ready: &apitypes.ServiceReady{HTTP: "/"}})
	require.NoError(t, err)
}

// TestPortsAcrossNodes: a service started through a node that does not
// own the session runs on the owner, and its port answers through any
// node, a WebSocket upgrade included (bytes echoed through the two
// proxies).
func TestPortsAcrossNodes(t *testing.T) {
	c := appCluster(t, 2)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	startEcho(t, n2, s.ID)

	resp, err := http.Get(n2.URL + "/v1/sessions/" + s.ID + "/ports/8080/hello?x=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "echo /hello?x=1\n", string(body))

	// A WebSocket upgrade through node-2 to node-1 to the service.
	conn, err := net.Dial("tcp", strings.TrimPrefix(n2.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "GET /v1/sessions/%s/ports/8080/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", s.ID, strings.TrimPrefix(n2.URL, "http://"))
	br := bufio.NewReader(conn)
	up, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, up.StatusCode)
	_, err = conn.Write([]byte("ping through two nodes"))
	require.NoError(t, err)
	got := make([]byte, len("ping through two nodes"))
	_, err = io.ReadFull(br, got)
	require.NoError(t, err)
	assert.Equal(t, "ping through two nodes", string(got))
}

// TestMCPAcrossNodes: an MCP client of a session's endpoint on a node
// that does not own the session works the session on its owner (the
// MCP session itself lives on the owner: every request of it is
// forwarded there).
func TestMCPAcrossNodes(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2)
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	tr := &mcp.StreamableClientTransport{Endpoint: n2.URL + "/mcp/sessions/" + s.ID, MaxRetries: -1}
	mc, err := mcp.NewClient(&mcp.Implementation{Name: "cluster-agent", Version: "1"}, nil).Connect(ctx, tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { mc.Close() })
	res, err := mc.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "by-mcp.txt", "content": "over two nodes\n"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	b, _, err := n1.C.ReadFile(ctx, s.ID, "by-mcp.txt")
	require.NoError(t, err)
	assert.Equal(t, "over two nodes\n", string(b))
	assert.Equal(t, "node-1", c.owner(t, s.ID))
}

// TestPreviewAcrossNodes: a preview host name opened with a port link on
// a node that does not own the session is served by the owner, the link's
// redirect and cookie included.
func TestPreviewAcrossNodes(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 2, "--preview-domain", "preview.test")
	n1, n2 := c.Nodes[0], c.Nodes[1]
	s := newSession(t, n1)
	startEcho(t, n1, s.ID)
	link, err := n1.C.PortLink(ctx, s.ID, 8080, 60)
	require.NoError(t, err)
	u, err := url.Parse(link.URL)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(u.Hostname(), ".preview.test"), "a preview link: %s", link.URL)

	// Every request goes to node-2, under the preview's host name.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	n2Addr := strings.TrimPrefix(n2.URL, "http://")
	hc := &http.Client{Jar: jar, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, n2Addr)
		}}}
	resp, err := hc.Get(link.URL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "echo /\n", string(body))
	resp, err = hc.Get("http://" + u.Host + "/again?x=1")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "echo /again?x=1\n", string(body))
}
