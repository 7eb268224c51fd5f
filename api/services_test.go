package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testport"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// serverPy is a small HTTP server for services in tests: it answers
// "<name> <path>" (the path with its query), streams /stream in chunks,
// and echoes the raw bytes of a WebSocket upgrade (after the 101, every
// byte comes back), so the tunnel through the port route is seen whole.
const serverPy = `import base64, hashlib, http.server, socketserver, sys, time
PORT, NAME = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            key = self.headers["Sec-WebSocket-Key"]
            acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", acc)
            self.end_headers()
            self.wfile.flush()
            while True:
                b = self.rfile.read1(4096)
                if not b:
                    break
                self.wfile.write(b)
            self.close_connection = True
            return
        if self.path.startswith("/append/"):
            try:
                with open(self.path[len("/append/"):], "a") as f:
                    f.write("appended by the service\n")
                body, code = b"ok\n", 200
            except OSError as e:
                body, code = (str(e) + "\n").encode(), 500
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/read/"):
            try:
                with open(self.path[len("/read/"):], "rb") as f:
                    body, code = f.read(), 200
            except OSError as e:
                body, code = (str(e) + "\n").encode(), 404
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                b = ("tick %d\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
            return
        body = ("%s %s\n" % (NAME, self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        print("request", self.path, flush=True)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
print("listening", PORT, flush=True)
S(("127.0.0.1", PORT), H).serve_forever()
`

// svcEnv is the daemon's handler over isolated commands (namespaces),
// the embedded store and a data directory a second daemon can reopen.
type svcEnv struct {
	t     testing.TB
	dir   string
	repo  string
	api   *Server
	srv   *httptest.Server
	en    *testengine.Engine
	wd    *workdir.Manager
	st    db.Store
	admin string
	once  sync.Once
}

const svcAdmin = "admin-token-for-services"

func newSvcEnv(t testing.TB, dir, repo string) *svcEnv {
	t.Helper()
	st, err := db.OpenSQLiteDir(t.Context(), dir)
	require.NoError(t, err)
	var en *testengine.Engine
	wd, err := workdir.New(workdir.Config{Dir: filepath.Join(dir, "workdir"), Hide: func() []string { return []string{dir} }})
	require.NoError(t, err)
	if !wd.Isolated() {
		wd.Close()
		st.Close()
		if os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION") == "1" {
			t.Fatal("SESSIOND_TEST_REQUIRE_ISOLATION=1: this machine must give commands their namespaces")
		}
		t.Skip("services reach their ports through namespaces; this machine gives none")
	}
	evs := events.New(st, nil)
	en = testengine.New(st, dir, session.Config{Events: evs, Workdirs: wd}, session.ExecConfig{MaxTimeout: time.Minute})
	e := &svcEnv{t: t, dir: dir, repo: repo, en: en, wd: wd, st: st, admin: svcAdmin}
	if _, err := en.Repos.Get(t.Context(), "r"); err != nil {
		_, err = en.Repos.Register(t.Context(), "r", repo)
		require.NoError(t, err)
	}
	e.api = New(Config{Manager: en.Sessions, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets,
		AdminToken: svcAdmin, TokenSecret: []byte("token secret for tests"), PreviewDomain: "preview.test"})
	e.srv = httptest.NewServer(e.api.Guard(e.api))
	t.Cleanup(e.close)
	return e
}

func (e *svcEnv) close() {
	e.once.Do(func() {
		e.srv.Close()
		e.en.Exec.StopAllServices()
		e.wd.Close()
		e.en.Close()
		e.st.Close()
	})
}

// call sends a request with token ("" for none) and reads the answer.
func (e *svcEnv) call(method, path, token string, body any, headers ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, b
}

// newSession makes a session holding server.py and returns its id and
// token.
func (e *svcEnv) newSession() (string, string) {
	e.t.Helper()
	code, b := e.call("POST", "/v1/sessions", e.admin, map[string]any{"repo": "r", "base": "main"})
	require.Equal(e.t, 201, code, "%s", b)
	var s apitypes.Session
	require.NoError(e.t, json.Unmarshal(b, &s))
	req, err := http.NewRequest("PUT", e.srv.URL+"/v1/sessions/"+s.ID+"/files/server.py", strings.NewReader(serverPy))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	res.Body.Close()
	require.Equal(e.t, 201, res.StatusCode)
	return s.ID, s.Token
}

func (e *svcEnv) start(id, token string, req map[string]any) apitypes.Service {
	e.t.Helper()
	code, b := e.call("POST", "/v1/sessions/"+id+"/services", token, req)
	require.Equal(e.t, 201, code, "%s", b)
	var s apitypes.Service
	require.NoError(e.t, json.Unmarshal(b, &s))
	return s
}

func (e *svcEnv) services(id string) map[string]apitypes.Service {
	e.t.Helper()
	code, b := e.call("GET", "/v1/sessions/"+id+"/services", e.admin, nil)
	require.Equal(e.t, 200, code, "%s", b)
	var l apitypes.ServiceList
	require.NoError(e.t, json.Unmarshal(b, &l))
	out := map[string]apitypes.Service{}
	for _, s := range l.Services {
		out[s.Name] = s
	}
	return out
}

func pyServer(port int, name string) map[string]any {
	return map[string]any{"name": "web", "argv": []string{"python3", "server.py", strconv.Itoa(port), name}, "port": port, "ready": map[string]any{"http": "/"}}
}

// TestServicePorts: a real HTTP server as a service, reached through the
// port route with the session's token, the admin token and a signed
// link, refused without one, with another session's token and with an
// expired link; the original path and query arrive; a streamed answer
// and a WebSocket upgrade pass; an undeclared port is 404 naming it; a
// preview host name reaches the same service; two sessions' services on
// one port do not meet; a command of the session reaches the service at
// 127.0.0.1 on its port.
func TestServicePorts(t *testing.T) {
	e := newSvcEnv(t, t.TempDir(), testrepo.Build(t, "small"))
	a, aTok := e.newSession()
	b, bTok := e.newSession()
	sa := e.start(a, aTok, pyServer(8080, "A"))
	assert.Equal(t, "running", sa.State)
	assert.Equal(t, e.srv.URL+"/v1/sessions/"+a+"/ports/8080/", sa.URL)
	sb := e.start(b, bTok, pyServer(8080, "B"))
	assert.Equal(t, "running", sb.State)

	port := "/v1/sessions/" + a + "/ports/8080"
	for _, tok := range []string{aTok, e.admin} {
		code, body := e.call("GET", port+"/hello/x%20y?q=1&r=two", tok, nil)
		assert.Equal(t, 200, code, "%s", body)
		assert.Equal(t, "A /hello/x%20y?q=1&r=two\n", string(body))
	}
	code, body := e.call("GET", "/v1/sessions/"+b+"/ports/8080/", bTok, nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "B /\n", string(body), "the other session's service on the same port")

	code, _ = e.call("GET", port+"/", "", nil)
	assert.Equal(t, 401, code, "no token")
	code, _ = e.call("GET", port+"/", bTok, nil)
	assert.Equal(t, 403, code, "another session's token")
	code, body = e.call("GET", "/v1/sessions/"+a+"/ports/9999/", aTok, nil)
	assert.Equal(t, 404, code)
	assert.Contains(t, string(body), "port 9999")
	code, body = e.call("GET", "/v1/sessions/"+a+"/ports/70000/", aTok, nil)
	assert.Equal(t, 400, code, "%s", body)

	// A signed link opens that port of that session, without a header.
	code, body = e.call("POST", port+"/link", aTok, map[string]any{"ttl_seconds": 60})
	require.Equal(t, 201, code, "%s", body)
	var link apitypes.PortLink
	require.NoError(t, json.Unmarshal(body, &link))
	assert.Contains(t, link.URL, "preview.test", "with a preview domain, the link opens the preview host")
	u, tok, ok := strings.Cut(link.URL, "?"+linkParam+"=")
	require.True(t, ok, link.URL)
	host := strings.TrimPrefix(strings.TrimSuffix(u, "/"), "http://")
	assert.Equal(t, "8080-"+a[:8]+".preview.test", host)
	pathLink := "/v1/links/" + tok + "/"
	code, body = e.call("GET", pathLink+"page?x=1", "", nil)
	assert.Equal(t, 200, code, "%s", body)
	assert.Equal(t, "A /page?x=1\n", string(body))
	// The preview host: the link in the query once, then its cookie.
	req, err := http.NewRequest("GET", e.srv.URL+"/?"+linkParam+"="+tok, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 303, res.StatusCode)
	cookie := res.Cookies()
	require.Len(t, cookie, 1)
	code, body = e.call("GET", "/abs/path", "", nil, "Host", host, "Cookie", cookie[0].Name+"="+cookie[0].Value)
	assert.Equal(t, 200, code, "%s", body)
	assert.Equal(t, "A /abs/path\n", string(body))
	code, _ = e.call("GET", "/abs/path", "", nil, "Host", host)
	assert.Equal(t, 401, code, "the preview host without a token or link")
	code, body = e.call("GET", "/", aTok, nil, "Host", host)
	assert.Equal(t, 200, code, "%s", body)
	code, _ = e.call("GET", "/", bTok, nil, "Host", host)
	assert.Equal(t, 403, code, "another session's token on the preview host")
	// Past its ttl, a link is 401; a forged one too; it opens no other port.
	expired := e.api.auth.linkToken(uuid.MustParse(a), 8080, time.Now().Add(-time.Second))
	code, body = e.call("GET", "/v1/links/"+expired+"/", "", nil)
	assert.Equal(t, 401, code)
	assert.Contains(t, string(body), "expired")
	code, _ = e.call("GET", "/v1/links/"+strings.Replace(tok, ".8080.", ".8081.", 1)+"/", "", nil)
	assert.Equal(t, 401, code, "a link altered to another port")
	code, _ = e.call("GET", "/v1/sessions/"+a+"/ports/8080/", tok, nil)
	assert.Equal(t, 401, code, "a link's token is no bearer token")

	// A streamed answer.
	code, body = e.call("GET", port+"/stream", aTok, nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "tick 0\ntick 1\ntick 2\n", string(body))

	// A WebSocket upgrade, then bytes both ways.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/ws HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		port, strings.TrimPrefix(e.srv.URL, "http://"), aTok)
	br := bufio.NewReader(conn)
	wsRes, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, wsRes.StatusCode)
	assert.Equal(t, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", wsRes.Header.Get("Sec-WebSocket-Accept"))
	for _, msg := range []string{"ping", "pong and more"} {
		_, err = conn.Write([]byte(msg))
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_, err = io.ReadFull(br, got)
		require.NoError(t, err)
		assert.Equal(t, msg, string(got))
	}

	// A command of the session reaches its service on its own loopback.
	code, body = e.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{
		"argv": []string{"python3", "-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/from-exec').read().decode(), end='')"}})
	require.Equal(t, 200, code, "%s", body)
	var x apitypes.ExecResponse
	require.NoError(t, json.Unmarshal(body, &x))
	assert.Equal(t, 0, x.ExitCode, "%s", x.Stderr)
	assert.Equal(t, "A /from-exec\n", x.Stdout)

	// Its logs: the last lines first.
	req, err = http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/v1/sessions/"+a+"/services/web/logs?tail=2", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+aTok)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var l apitypes.ServiceLogLine
			require.NoError(t, json.Unmarshal([]byte(d), &l))
			lines = append(lines, l.Line)
		}
	}
	require.Len(t, lines, 2)
	assert.Equal(t, "request /from-exec", lines[1])
}

// markerProcs counts the host's processes whose command line holds
// marker.
func markerProcs(marker string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			n++
		}
	}
	return n
}

// TestServiceLifecycle: what a service writes is recorded as op service
// at the session's next command and seen by it; stop ends the whole
// process tree, even a process that left the service's process group;
// bad input gets a clear error; a ready check that never passes stops
// the service and answers with its output; idle services stop; a
// restarted daemon reports the services stopped, and the session goes
// on.
func TestServiceLifecycle(t *testing.T) {
	dir := t.TempDir()
	repo := testrepo.Build(t, "small")
	e := newSvcEnv(t, dir, repo)
	a, aTok := e.newSession()

	marker := "31337" + strconv.Itoa(os.Getpid())
	s := e.start(a, aTok, map[string]any{"name": "web", "port": 8080, "ready": map[string]any{"tcp": true},
		"command": "echo from the service > written.txt; setsid sleep " + marker + " & exec python3 server.py 8080 A"})
	assert.Equal(t, "running", s.State)
	assert.NotZero(t, s.PID)
	require.Eventually(t, func() bool { return markerProcs(marker) == 1 }, 10*time.Second, 10*time.Millisecond)

	// The next command sees the service's file and records it first.
	code, body := e.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{"argv": []string{"cat", "written.txt"}})
	require.Equal(t, 200, code, "%s", body)
	var x apitypes.ExecResponse
	require.NoError(t, json.Unmarshal(body, &x))
	assert.Equal(t, "from the service\n", x.Stdout)
	assert.Nil(t, x.Mutation, "the command changed nothing")
	code, body = e.call("GET", "/v1/sessions/"+a+"/mutations", aTok, nil)
	require.Equal(t, 200, code, "%s", body)
	var ms struct {
		Mutations []apitypes.Mutation `json:"mutations"`
	}
	require.NoError(t, json.Unmarshal(body, &ms))
	var svcOps []apitypes.Mutation
	for _, m := range ms.Mutations {
		if m.Op == "service" {
			svcOps = append(svcOps, m)
		}
	}
	require.Len(t, svcOps, 1, "%s", body)
	assert.Equal(t, []string{"written.txt"}, svcOps[0].Paths)
	require.NotNil(t, svcOps[0].Exec)
	assert.Equal(t, "web", svcOps[0].Exec.Service)
	code, body = e.call("GET", "/v1/sessions/"+a+"/files/written.txt", aTok, nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "from the service\n", string(body))

	// Bad input.
	for _, tc := range []struct {
		body map[string]any
		code int
		msg  string
	}{
		{pyServer(0, "x"), 400, "port 0"},
		{pyServer(65536, "x"), 400, "port 65536"},
		{map[string]any{"name": "web", "argv": []string{"true"}}, 409, "runs one by that name"},
		{map[string]any{"name": "other", "argv": []string{"true"}, "port": 8080}, 409, "port 8080"},
		{map[string]any{"name": "Bad Name", "argv": []string{"true"}}, 400, "service name"},
		{map[string]any{"name": "x", "argv": []string{"true"}, "restart": "always"}, 400, "restart"},
		{map[string]any{"name": "x", "argv": []string{"true"}, "ready": map[string]any{"tcp": true}}, 400, "ready"},
	} {
		code, body := e.call("POST", "/v1/sessions/"+a+"/services", aTok, tc.body)
		assert.Equal(t, tc.code, code, "%v: %s", tc.body, body)
		assert.Contains(t, string(body), tc.msg)
	}
	code, body = e.call("POST", "/v1/sessions/"+a+"/services", aTok, map[string]any{"name": "slow", "port": 8090,
		"command": "echo booting; echo still booting; exec sleep 600", "ready": map[string]any{"tcp": true, "timeout_seconds": 0.5}})
	assert.Equal(t, 400, code)
	assert.Contains(t, string(body), "still booting", "the log's tail")
	assert.Equal(t, "failed", e.services(a)["slow"].State)

	// After a command (its own mount of the view), the service still
	// changes the base's files, and the next command records it.
	for _, f := range []string{"a.txt", "a/b/c/deep.txt"} {
		code, body = e.call("GET", "/v1/sessions/"+a+"/ports/8080/append/"+f, aTok, nil)
		require.Equal(t, 200, code, "%s", body)
		code, body = e.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{"argv": []string{"tail", "-n", "1", f}})
		require.Equal(t, 200, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &x))
		assert.Equal(t, "appended by the service\n", x.Stdout, f)
		code, body = e.call("GET", "/v1/sessions/"+a+"/files/"+f, aTok, nil)
		require.Equal(t, 200, code, "%s", body)
		assert.True(t, strings.HasSuffix(string(body), "appended by the service\n"), "recorded: %s", body)
	}

	// A write through the API reaches the running service's view at
	// once, with no command between.
	req, err := http.NewRequest("PUT", e.srv.URL+"/v1/sessions/"+a+"/files/a/top.txt", strings.NewReader("written through the API\n"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+aTok)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Less(t, res.StatusCode, 300)
	code, body = e.call("GET", "/v1/sessions/"+a+"/ports/8080/read/a/top.txt", aTok, nil)
	assert.Equal(t, 200, code, "%s", body)
	assert.Equal(t, "written through the API\n", string(body))

	// Stop: the whole tree ends, the setsid'd sleep too.
	code, body = e.call("DELETE", "/v1/sessions/"+a+"/services/web", aTok, nil)
	require.Equal(t, 200, code, "%s", body)
	var stopped apitypes.Service
	require.NoError(t, json.Unmarshal(body, &stopped))
	assert.Equal(t, "stopped", stopped.State)
	assert.Equal(t, session.ReasonRequested, stopped.Reason)
	require.Eventually(t, func() bool { return markerProcs(marker) == 0 }, 5*time.Second, 10*time.Millisecond)
	code, _ = e.call("GET", "/v1/sessions/"+a+"/ports/8080/", aTok, nil)
	assert.Equal(t, 404, code, "a stopped service's port")
	code, _ = e.call("DELETE", "/v1/sessions/"+a+"/services/nope", aTok, nil)
	assert.Equal(t, 404, code)

	// A checkpoint is a capture point too.
	// Without a ready check the answer still names the pid inside.
	assert.NotZero(t, e.start(a, aTok, map[string]any{"name": "cp", "command": "echo cp > cp.tmp && mv cp.tmp cp.txt; exec sleep 600"}).PID)
	require.Eventually(t, func() bool { return e.upperHas(a, "cp.txt") }, 10*time.Second, 10*time.Millisecond)
	code, body = e.call("POST", "/v1/sessions/"+a+"/checkpoints", aTok, map[string]any{"label": "with cp"})
	require.Equal(t, 201, code, "%s", body)
	code, body = e.call("GET", "/v1/sessions/"+a+"/files/cp.txt", aTok, nil)
	assert.Equal(t, 200, code, "the checkpoint recorded the service's file first: %s", body)
	code, body = e.call("DELETE", "/v1/sessions/"+a+"/services/cp", aTok, nil)
	require.Equal(t, 200, code, "%s", body)

	// on-failure: started again, five times at most.
	e.start(a, aTok, map[string]any{"name": "flaky", "command": "echo once more; exit 3", "restart": "on-failure"})
	require.Eventually(t, func() bool {
		f := e.services(a)["flaky"]
		return f.Restarts == 5 && f.State == "failed"
	}, 90*time.Second, 20*time.Millisecond, "%+v", e.services(a)["flaky"])
	f := e.services(a)["flaky"]
	require.NotNil(t, f.ExitCode)
	assert.Equal(t, 3, *f.ExitCode)
	assert.Contains(t, f.LogTail, "once more")

	// Idle: nothing through the port and no command for the period.
	// The repository's policy sets the period (1 s here).
	code, body = e.call("PUT", "/v1/repos/r/policy", e.admin, map[string]any{"exec": map[string]any{"service_idle_seconds": 1}})
	require.Equal(t, 200, code, "%s", body)
	// A program that is not there: the answer says the service ended
	// (failed with 127, or stopped when this test's short idle period
	// stopped it first), never that it runs.
	missing := e.start(a, aTok, map[string]any{"name": "missing", "argv": []string{"/no/such/program"}})
	assert.Contains(t, []string{"failed", "stopped"}, missing.State)
	assert.Zero(t, missing.PID)

	e.start(a, aTok, map[string]any{"name": "idle", "argv": []string{"sleep", "600"}})
	require.Eventually(t, func() bool { return e.services(a)["idle"].State == "stopped" }, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, session.ReasonIdle, e.services(a)["idle"].Reason)
	code, body = e.call("PUT", "/v1/repos/r/policy", e.admin, map[string]any{})
	require.Equal(t, 200, code, "%s", body)

	// A daemon restart: the running service reads as stopped by it, what
	// it wrote is recorded at the next command, and the session goes on.
	e.start(a, aTok, map[string]any{"name": "late", "command": "echo late > late.tmp && mv late.tmp late.txt; exec sleep 600"})
	require.Eventually(t, func() bool { return e.upperHas(a, "late.txt") }, 10*time.Second, 10*time.Millisecond)
	e.close()
	e2 := newSvcEnv(t, dir, repo)
	got := e2.services(a)
	assert.Equal(t, "stopped", got["late"].State)
	assert.Equal(t, session.ReasonRestarted, got["late"].Reason)
	assert.Equal(t, "stopped", got["web"].State)
	code, body = e2.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{"argv": []string{"cat", "late.txt"}})
	require.Equal(t, 200, code, "%s", body)
	require.NoError(t, json.Unmarshal(body, &x))
	assert.Equal(t, "late\n", x.Stdout)
	code, body = e2.call("GET", "/v1/sessions/"+a+"/files/late.txt", aTok, nil)
	assert.Equal(t, 200, code, "%s", body)

	// The session's end stops its services.
	e2.start(a, aTok, map[string]any{"name": "end", "argv": []string{"sleep", "600"}})
	code, body = e2.call("DELETE", "/v1/sessions/"+a, aTok, nil)
	require.Equal(t, 200, code, "%s", body)
	assert.Equal(t, "stopped", e2.services(a)["end"].State)
	assert.Equal(t, session.ReasonEnded, e2.services(a)["end"].Reason)
}

// BenchmarkServicePort: a request through the port route (the daemon's
// reverse proxy, the Unix socket, the sandbox's relay) against the same
// server program run directly on the host, in the same run, as median
// latencies of keep-alive GETs (ns/op is the port route's); and a
// trivial server's start to ready through the daemon against the same
// server's own start on the host.
func BenchmarkServicePort(b *testing.B) {
	e := newSvcEnv(b, b.TempDir(), testrepo.Build(b, "small"))
	id, tok := e.newSession()
	code, body := e.call("POST", "/v1/sessions/"+id+"/services", tok, pyServer(8080, "A"))
	require.Equal(b, 201, code, "%s", body)

	// The same program on the host.
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "server.py"), []byte(serverPy), 0o644))
	hostPort := testport.Free(b)
	cmd := exec.Command("python3", "server.py", strconv.Itoa(hostPort), "H")
	cmd.Dir = dir
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	direct := "http://127.0.0.1:" + strconv.Itoa(hostPort) + "/x"
	require.Eventually(b, func() bool {
		r, err := http.Get(direct)
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func(url, token string) time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		r, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			b.Fatalf("%s: %d", url, r.StatusCode)
		}
		return time.Since(start)
	}
	routed := e.srv.URL + "/v1/sessions/" + id + "/ports/8080/x"
	for range 20 { // warm both
		get(routed, tok)
		get(direct, "")
	}
	var viaRoute, viaDirect []time.Duration
	b.ResetTimer()
	for range b.N {
		viaRoute = append(viaRoute, get(routed, tok))
		b.StopTimer()
		viaDirect = append(viaDirect, get(direct, ""))
		b.StartTimer()
	}
	b.StopTimer()
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	b.ReportMetric(med(viaRoute), "route-median-µs")
	b.ReportMetric(med(viaDirect), "direct-median-µs")

	// Start to ready, against the server's own start; and start alone (a
	// service without a ready check answers once its sandbox started).
	var toReady, own, ownInside, toRun []time.Duration
	for i := range 5 {
		start := time.Now()
		code, body := e.call("POST", "/v1/sessions/"+id+"/services", tok, map[string]any{"name": "t" + strconv.Itoa(i),
			"argv": []string{"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", "9000"}, "port": 9000, "ready": map[string]any{"tcp": true}})
		toReady = append(toReady, time.Since(start))
		require.Equal(b, 201, code, "%s", body)
		code, body = e.call("DELETE", "/v1/sessions/"+id+"/services/t"+strconv.Itoa(i), tok, nil)
		require.Equal(b, 200, code, "%s", body)
		start = time.Now()
		code, body = e.call("POST", "/v1/sessions/"+id+"/services", tok, map[string]any{"name": "s" + strconv.Itoa(i), "argv": []string{"sleep", "600"}})
		toRun = append(toRun, time.Since(start))
		require.Equal(b, 201, code, "%s", body)
		code, body = e.call("DELETE", "/v1/sessions/"+id+"/services/s"+strconv.Itoa(i), tok, nil)
		require.Equal(b, 200, code, "%s", body)

		p := testport.Free(b)
		start = time.Now()
		c := exec.Command("/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(p))
		c.Dir = dir
		require.NoError(b, c.Start())
		for {
			conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err == nil {
				conn.Close()
				break
			}
			time.Sleep(time.Millisecond)
		}
		own = append(own, time.Since(start))
		_ = c.Process.Kill()
		_ = c.Wait()

		// Its own start inside a sandbox of the session, timed there.
		code, body = e.call("POST", "/v1/sessions/"+id+"/exec", tok, map[string]any{"argv": []string{"/usr/bin/python3", "-c", ownStartPy}})
		require.Equal(b, 200, code, "%s", body)
		var x apitypes.ExecResponse
		require.NoError(b, json.Unmarshal(body, &x))
		us, err := strconv.Atoi(strings.TrimSpace(x.Stdout))
		require.NoError(b, err, "%s %s", x.Stdout, x.Stderr)
		ownInside = append(ownInside, time.Duration(us)*time.Microsecond)
	}
	b.ReportMetric(med(toReady)/1000, "start-to-ready-ms")
	b.ReportMetric(med(own)/1000, "server-own-start-ms")
	b.ReportMetric(med(toRun)/1000, "start-no-check-ms")
	b.ReportMetric(med(ownInside)/1000, "server-own-start-inside-ms")
}

// ownStartPy times python3 -m http.server from its start until it
// accepts a connection, in microseconds.
const ownStartPy = `import socket, subprocess, time
t = time.monotonic()
p = subprocess.Popen(["/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", "9100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
    try:
        socket.create_connection(("127.0.0.1", 9100)).close()
        break
    except OSError:
        time.sleep(0.001)
print(int((time.monotonic() - t) * 1e6))
p.kill()
`

// upperHas reports whether the session's scratch holds a file at p (the
// overlay's upper directory, or copy mode's view).
func (e *svcEnv) upperHas(id, p string) bool {
	for _, d := range []string{"upper", "view"} {
		if _, err := os.Stat(filepath.Join(e.wd.ScratchDir(id), d, p)); err == nil {
			return true
		}
	}
	return false
}

// TestServiceHoldsView: in overlay mode, services keep the view on the
// base they started on; a command after a rebase is 409 naming them
// (the rebase itself goes through), and runs on the new base once they
// stopped. In copy mode the view follows the rebase under the service.
func TestServiceHoldsView(t *testing.T) {
	plainRunOnly(t, "a service holding its view across a rebase, and commands in namespaces")
	repo := testrepo.Build(t, "small")
	e := newSvcEnv(t, t.TempDir(), repo)
	a, aTok := e.newSession()
	e.start(a, aTok, map[string]any{"name": "hold", "command": "exec sleep 600"})

	require.NoError(t, os.WriteFile(filepath.Join(repo, "upstream.txt"), []byte("upstream\n"), 0o644))
	testrepo.Git(t, repo, "checkout", "-q", "main")
	testrepo.Git(t, repo, "add", "upstream.txt")
	testrepo.Git(t, repo, "commit", "-qm", "upstream")
	code, body := e.call("POST", "/v1/sessions/"+a+"/rebase", aTok, map[string]any{})
	require.Equal(t, 200, code, "%s", body)

	run := func() (int, []byte) {
		return e.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{"argv": []string{"cat", "upstream.txt"}})
	}
	if e.wd.Mode() == workdir.ModeOverlay {
		code, body = run()
		require.Equal(t, 409, code, "%s", body)
		assert.Contains(t, string(body), "running services hold its view")
		code, body = e.call("DELETE", "/v1/sessions/"+a+"/services/hold", aTok, nil)
		require.Equal(t, 200, code, "%s", body)
	}
	code, body = run()
	require.Equal(t, 200, code, "%s", body)
	var x apitypes.ExecResponse
	require.NoError(t, json.Unmarshal(body, &x))
	assert.Equal(t, "upstream\n", x.Stdout)
}

// TestServiceOnEnvironment: a service runs on the repository's
// environment layer as commands do, also when it is the session's first
// process (the layer is built for it); a command after it runs on the
// same view (no reset, no 409), and what the service wrote is recorded.
func TestServiceOnEnvironment(t *testing.T) {
	plainRunOnly(t, "a service on an environment built by a setup command in namespaces")
	e := newSvcEnv(t, t.TempDir(), testrepo.Build(t, "small"))
	code, body := e.call("PUT", "/v1/repos/r/environment", e.admin, map[string]any{
		"setup":   []any{"mkdir -p deps && echo installed > deps/ok.txt && echo deps/ > .gitignore-env"},
		"include": []any{map[string]any{"path": "tool.conf", "content": "from the layer\n"}},
	})
	require.Equal(t, 200, code, "%s", body)
	a, aTok := e.newSession()
	e.start(a, aTok, map[string]any{"name": "dev", "command": "cat tool.conf > seen.tmp && mv seen.tmp seen.txt; exec sleep 600"})
	require.Eventually(t, func() bool { return e.upperHas(a, "seen.txt") }, 20*time.Second, 10*time.Millisecond)

	code, body = e.call("POST", "/v1/sessions/"+a+"/exec", aTok, map[string]any{"argv": []string{"cat", "seen.txt", "tool.conf"}})
	require.Equal(t, 200, code, "%s", body)
	var x apitypes.ExecResponse
	require.NoError(t, json.Unmarshal(body, &x))
	assert.Equal(t, "from the layer\nfrom the layer\n", x.Stdout)
	code, body = e.call("GET", "/v1/sessions/"+a+"/files/seen.txt", aTok, nil)
	assert.Equal(t, 200, code, "%s", body)
	assert.Equal(t, "from the layer\n", string(body))
}
