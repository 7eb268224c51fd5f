package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// cliResult is one in-process run of the command line.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command line in-process, as the binary's main does,
// with the environment variables of the client cleared.
func runCLI(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return cliResult{code, stdout.String(), stderr.String()}
}

// clientEnv points the client at d, with the session given, and no token
// from the test's own environment.
func clientEnv(t *testing.T, d *daemon, session string) {
	t.Setenv("SESSIOND_SERVER", d.URL)
	t.Setenv("SESSIOND_TOKEN", d.Token)
	t.Setenv("SESSIOND_SESSION", session)
}

func TestCLIUsage(t *testing.T) {
	r := runCLI(t, "")
	assert.Equal(t, exitUsage, r.code, "no command is a usage error")
	assert.Contains(t, r.stderr, "Usage: sessiond")

	r = runCLI(t, "", "--help")
	assert.Equal(t, exitOK, r.code)
	// Help is generated from the declarations: every command and every
	// flag the old hand-written text left out is there.
	for _, want := range []string{"serve", "quickstart", "repo add", "session new", "ls", "cat", "put", "chmod", "rm", "grep",
		"log", "diff", "events", "checkpoint ls", "rollback", "fork", "rebase", "merge", "changeset submit", "changeset undo",
		"changeset layers", "$SESSIOND_SERVER", "$SESSIOND_TOKEN", "$SESSIOND_SESSION", "--json"} {
		assert.Contains(t, r.stdout, want)
	}
	r = runCLI(t, "", "session", "new", "--help")
	assert.Equal(t, exitOK, r.code)
	for _, want := range []string{"--policy", "-q, --quiet", "--ttl", "--repo"} {
		assert.Contains(t, r.stdout, want)
	}
	r = runCLI(t, "", "help", "serve")
	assert.Equal(t, exitOK, r.code)
	for _, want := range []string{"$SESSIOND_MAX_BODY_BYTES", "$SESSIOND_ADDR", "--repo"} {
		assert.Contains(t, r.stdout, want)
	}
	// The daemon's commands list their own flags with their defaults, not
	// the client's they do not read (mcp reads --server, --token and
	// --session, not --json).
	for _, tc := range []struct {
		args          []string
		want, without []string
	}{
		{[]string{"serve", "--help"}, []string{"default 127.0.0.1:7420; $SESSIOND_ADDR", "default 128MiB; $SESSIOND_MAX_BODY_BYTES", "default 1h; $SESSIOND_EXEC_MAX_TIMEOUT", "--workdir-no-namespaces"},
			[]string{"--server=", "--token=", "--session=", "--json", "default false"}},
		{[]string{"help", "quickstart"}, nil, []string{"--server=", "--token=", "--json"}},
		{[]string{"mcp", "--help"}, []string{"--probe=DURATION", "(default 1s)", "default mcp; $SESSIOND_AGENT", "default 4GiB; $SESSIOND_EXEC_MEMORY", "--server=URL", "--session=ID"},
			[]string{"--json"}},
		{[]string{"session", "new", "--help"}, []string{"--server=URL", "--json", "default http://127.0.0.1:7420; $SESSIOND_SERVER"}, nil},
	} {
		r := runCLI(t, "", tc.args...)
		assert.Equal(t, exitOK, r.code, "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, strings.Join(strings.Fields(r.stdout), " "), w, "%v", tc.args)
		}
		for _, w := range tc.without {
			assert.NotContains(t, r.stdout, w, "%v", tc.args)
		}
	}
	r = runCLI(t, "", "serve", "--json", "--addr", "bogus")
	assert.Equal(t, exitUsage, r.code, "the client's flags still parse everywhere")
	assert.Contains(t, r.stderr, "--addr")

	for _, args := range [][]string{
		{"nosuchcommand"},
		{"ls", "--bogus"},
		{"cat"},            // a missing argument
		{"cat", "a", "b"},  // one too many
		{"serve", "extra"}, // serve takes none
		{"put", "x", "--mode", "600"},
		{"session", "new", "--ttl", "soon", "--repo", "r"},
		{"diff", "--color", "sometimes"},
	} {
		r := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, r.code, "sessiond %v: %s", args, r.stderr)
		assert.NotEmpty(t, r.stderr, "sessiond %v says what was wrong", args)
	}
	r = runCLI(t, "", "put", "x", "--mode", "600")
	assert.Contains(t, r.stderr, `mode "600"`)
}

// TestServeRefusesBadEnvironment: a value of a variable that does not
// parse, or parses to something the daemon cannot use, stops the daemon
// before it starts, naming the variable (and never echoing a database
// URL, which may hold a password).
func TestServeRefusesBadEnvironment(t *testing.T) {
	plainRunOnly(t, "the daemon's binary refusing its environment")
	for _, tc := range []struct{ name, value string }{
		{"SESSIOND_MAX_BODY_BYTES", "10 parsecs"},
		{"SESSIOND_MAX_BODY_BYTES", "MB"},
		{"SESSIOND_MAX_FILE_BYTES", "-1"},
		{"SESSIOND_MAX_OVERLAY_ENTRIES", "many"},
		{"SESSIOND_MAX_OVERLAY_ENTRIES", "0"},
		{"SESSIOND_HEARTBEAT", "15"},
		{"SESSIOND_WRITE_TIMEOUT", "0s"},
		{"SESSIOND_WRITE_TIMEOUT", "soon"},
		{"SESSIOND_LOG_LEVEL", "loud"},
		{"SESSIOND_LOG_FORMAT", "xml"},
		{"SESSIOND_WORKDIR_MODE", "fast"},
		{"SESSIOND_REPOS", "r"},
		{"SESSIOND_REPOS", "r=/somewhere,=/elsewhere"},
		{"SESSIOND_ADDR", "localhost"},
		{"SESSIOND_ADDR", "0.0.0.0:7420"},
		{"SESSIOND_DATABASE_URL", "postgres://u:hunter2@[::1"},
		{"SESSIOND_ALLOWED_HOSTS", "http://sessiond.internal"},
		{"SESSIOND_ALLOWED_HOSTS", "ok.internal,bad.internal:99999"},
		{"SESSIOND_LOCAL_USER", " padded"},
		{"SESSIOND_COMMIT_URL", "https://forge.example/{repo}"},
		{"SESSIOND_COMMIT_URL", "javascript:alert(1)//{commit}"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			args := []string{"serve", "--data-dir", t.TempDir()}
			if tc.name != "SESSIOND_ADDR" {
				args = append(args, "--addr", "127.0.0.1:0")
			}
			cmd := exec.Command(testdaemon.Binary, args...)
			cmd.Env = append(cmd.Environ(), tc.name+"="+tc.value)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			assert.Equal(t, exitUsage, ee.ExitCode(), "%s", out)
			assert.Contains(t, string(out), tc.name)
			assert.NotContains(t, string(out), "listening")
			assert.NotContains(t, string(out), "hunter2")
		})
	}
}

// TestClientRefusesBadServer: a --server or SESSIOND_SERVER that is not an
// http(s) URL is a usage error naming it, before any request.
func TestClientRefusesBadServer(t *testing.T) {
	for _, server := range []string{"bogus", "ftp://x", "http://[::1", "http://", "127.0.0.1:7420"} {
		t.Setenv("SESSIOND_SERVER", server)
		r := runCLI(t, "", "repo", "ls")
		assert.Equal(t, exitUsage, r.code, "SESSIOND_SERVER=%s: %s", server, r.stderr)
		assert.Contains(t, r.stderr, "SESSIOND_SERVER", server)
		assert.Contains(t, r.stderr, "--server", server)
	}
	t.Setenv("SESSIOND_SERVER", "")
	r := runCLI(t, "", "--server", "ftp://x", "session", "ls")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, `"ftp://x"`)
}

// TestServeTakesHumanSizes: SESSIOND_MAX_BODY_BYTES=10MB is ten million
// bytes, not ignored.
func TestServeTakesHumanSizes(t *testing.T) {
	plainRunOnly(t, "the daemon's binary reading its flags")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	t.Setenv("SESSIOND_MAX_BODY_BYTES", "1KiB")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "small.txt", bytes.Repeat([]byte("a"), 1024), client.WriteOptions{})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "big.txt", bytes.Repeat([]byte("a"), 1025), client.WriteOptions{})
	assert.Equal(t, apitypes.CodeTooLarge, client.Code(err))
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "10MB": 10_000_000, "10mb": 10_000_000, "10 MB": 10_000_000, "128MiB": 128 << 20,
		"128M": 128 << 20, "2GiB": 2 << 30, "1kb": 1000, "1K": 1024, "7B": 7, "1TiB": 1 << 40,
	} {
		got, err := parseByteSize(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1.5MB", "10 parsecs", "1e6", "99999999999999999999", "9999999999TiB", "0x10"} {
		_, err := parseByteSize(in)
		assert.Error(t, err, in)
	}
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"10MB", "128MiB", "0", "1 k", "9223372036854775807", "8EiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseByteSize(%q) = %d, negative", s, n)
		}
	})
}

func TestParseSecondsAndModes(t *testing.T) {
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "0": 0, "10m": 10 * time.Minute, "1h30m": 90 * time.Minute, "1.5s": 1500 * time.Millisecond} {
		got, err := parseSeconds(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "soon", "-5", "-1m", "10 minutes"} {
		_, err := parseSeconds(in)
		assert.Error(t, err, in)
	}
	for in, want := range map[string]string{"755": "100755", "0755": "100755", "100755": "100755", "644": "100644", "0644": "100644", "100644": "100644", "120000": "120000", "symlink": "120000"} {
		got, err := parseFileMode(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "600", "777", "160000", "100600", "x"} {
		_, err := parseFileMode(in)
		assert.Error(t, err, in)
	}
}

// TestColorDiff: colours come from the diff's structure. Inside a hunk a
// removed line "-- x" (written "--- x") is a removal and an added "++ y"
// ("+++ y") an addition, though they start like the file headers "--- a/…"
// and "+++ b/…".
func TestColorDiff(t *testing.T) {
	diff := "diff --git a/f.sql b/f.sql\n" +
		"index 1111111..2222222 100644\n" +
		"--- a/f.sql\n" +
		"+++ b/f.sql\n" +
		"@@ -1,3 +1,3 @@ select\n" +
		" keep\n" +
		"--- x\n" +
		"+++ y\n" +
		" last\n" +
		"\\ No newline at end of file\n" +
		"diff --git a/g b/g\n" +
		"new file mode 100644\n" +
		"--- /dev/null\n" +
		"+++ b/g\n" +
		"@@ -0,0 +1 @@\n" +
		"+--- not a header\n"
	got := strings.Split(string(colorDiff([]byte(diff))), "\n")
	want := []string{
		"\x1b[1mdiff --git a/f.sql b/f.sql\x1b[m",
		"\x1b[1mindex 1111111..2222222 100644\x1b[m",
		"\x1b[1m--- a/f.sql\x1b[m",
		"\x1b[1m+++ b/f.sql\x1b[m",
		"\x1b[36m@@ -1,3 +1,3 @@\x1b[m \x1b[mselect\x1b[m",
		" keep",
		"\x1b[31m--- x\x1b[m",
		"\x1b[32m+++ y\x1b[m",
		" last",
		"\\ No newline at end of file",
		"\x1b[1mdiff --git a/g b/g\x1b[m",
		"\x1b[1mnew file mode 100644\x1b[m",
		"\x1b[1m--- /dev/null\x1b[m",
		"\x1b[1m+++ b/g\x1b[m",
		"\x1b[36m@@ -0,0 +1 @@\x1b[m",
		"\x1b[32m+--- not a header\x1b[m",
		"",
	}
	assert.Equal(t, want, got)
}

// TestCLICommands drives the client commands against a real daemon.
func TestCLICommands(t *testing.T) {
	plainRunOnly(t, "the CLI's commands against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--admin-token", "admin-secret")
	clientEnv(t, d, "")

	// --ttl: a bare number is seconds, a duration is a duration.
	for ttl, want := range map[string]time.Duration{"10": 10 * time.Second, "10m": 10 * time.Minute} {
		r := runCLI(t, "", "session", "new", "--repo", "r", "--ttl", ttl, "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var s apitypes.Session
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
		require.NotNil(t, s.ExpiresAt)
		assert.InDelta(t, want.Seconds(), s.ExpiresAt.Sub(s.LastActiveAt).Seconds(), 1, "--ttl %s", ttl)
	}

	// No state carries over between invocations: a --policy given once
	// does not stick to the next session.
	r := runCLI(t, "", "session", "new", "--repo", "r", "-q", "--policy", `{"deny":["secrets/**"]}`)
	require.Equal(t, exitOK, r.code, r.stderr)
	withPolicy := strings.TrimSpace(r.stdout)
	r = runCLI(t, "", "session", "new", "--repo", "r", "-q")
	require.Equal(t, exitOK, r.code, r.stderr)
	id := strings.TrimSpace(r.stdout)
	p, err := d.C.GetSession(ctx, withPolicy)
	require.NoError(t, err)
	assert.Equal(t, []string{"secrets/**"}, p.Policy.Deny)
	s, err := d.C.GetSession(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, s.Policy.Deny, "the earlier --policy does not stick")
	clientEnv(t, d, id)

	// grep exits 1 when nothing matches, as grep does, and 0 when
	// something does.
	r = runCLI(t, "", "grep", "no such text anywhere")
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	r = runCLI(t, "", "grep", "package")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "src/main.go:1:package main")
	// grep -C prints context as git grep -C does, on the same files.
	for _, n := range []string{"1", "3"} {
		r = runCLI(t, "", "grep", "-C", n, "func|import")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, git(t, repo, "grep", "-n", "-E", "-C", n, "-e", "func|import")+"\n", r.stdout, "-C %s", n)
	}
	r = runCLI(t, "", "grep", "--context=-1", "package")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--context -1")

	// put --mode without content changes only the mode, as chmod does.
	before, meta, err := d.C.ReadFile(ctx, id, "README.md")
	require.NoError(t, err)
	r = runCLI(t, "ignored", "put", "README.md", "--mode", "755")
	require.Equal(t, exitOK, r.code, r.stderr)
	after, meta2, err := d.C.ReadFile(ctx, id, "README.md")
	require.NoError(t, err)
	assert.Equal(t, before, after, "the content stays")
	assert.Equal(t, meta.OID, meta2.OID)
	assert.Equal(t, "100755", meta2.Mode)
	r = runCLI(t, "", "chmod", "644", "README.md")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, meta3, err := d.C.ReadFile(ctx, id, "README.md")
	require.NoError(t, err)
	assert.Equal(t, "100644", meta3.Mode)
	r = runCLI(t, "", "chmod", "755", "README.md", "--if-match", strings.Repeat("0", 40))
	assert.Equal(t, exitConflict, r.code, "a stale --if-match is a conflict: %s", r.stderr)
	r = runCLI(t, "", "chmod", "755", "no/such/file")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "not_found")

	// put with content and --mode writes both.
	r = runCLI(t, "#!/bin/sh\n", "put", "tool.sh", "-", "--mode", "0755")
	require.Equal(t, exitOK, r.code, r.stderr)
	data, meta4, err := d.C.ReadFile(ctx, id, "tool.sh")
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\n", string(data))
	assert.Equal(t, "100755", meta4.Mode)

	// --create over an existing file is a conflict (exit 3).
	r = runCLI(t, "x", "put", "tool.sh", "--create")
	assert.Equal(t, exitConflict, r.code, r.stderr)
	assert.Contains(t, r.stderr, "precondition_failed")

	// --json errors keep the API's code.
	r = runCLI(t, "", "cat", "no/such", "--json")
	assert.Equal(t, exitError, r.code)
	var e struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &e), r.stdout)
	assert.Equal(t, apitypes.CodeNotFound, e.Error["code"])

	// Repeatable flags start empty on every invocation.
	sub := runCLI(t, "", "changeset", "submit", "-q")
	require.Equal(t, exitOK, sub.code, sub.stderr)
	cs := strings.TrimSpace(sub.stdout)
	for range 2 {
		r = runCLI(t, "", "changeset", "review", cs, "--author", "lead", "--comment", "tool.sh:1:why, and how?", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var res apitypes.ReviewResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		require.Len(t, res.Review.Comments, 1)
		assert.Equal(t, "why, and how?", res.Review.Comments[0].Body, "a comma does not split a comment")
	}
	r = runCLI(t, "", "changeset", "review", cs, "--comment", "tool.sh:zero:x")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--comment")
}

// TestCLIRollbackAndListing: rollback takes a checkpoint's label and
// "base"; `ls src/` and the API's prefix=src/ list the directory src.
func TestCLIRollbackAndListing(t *testing.T) {
	plainRunOnly(t, "the CLI's rollback and listings against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)

	// Listing: the CLI's argument and the API's prefix, with and without
	// the slash, all agree.
	var lists []string
	for _, prefix := range []string{"src", "src/"} {
		r := runCLI(t, "", "ls", prefix, "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		lists = append(lists, r.stdout)
		es, err := d.C.Tree(ctx, s.ID, client.TreeOptions{Prefix: prefix})
		require.NoError(t, err, "prefix=%s", prefix)
		b, _ := json.MarshalIndent(apitypes.Tree{Entries: es}, "", "  ")
		lists = append(lists, string(b)+"\n")
	}
	for _, l := range lists[1:] {
		assert.Equal(t, lists[0], l)
	}
	assert.Contains(t, lists[0], `"src/main.go"`)
	res, err := d.C.Search(ctx, s.ID, apitypes.SearchRequest{Pattern: "package", Prefix: "src/lib/"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Matches)
	for _, m := range res.Matches {
		assert.True(t, strings.HasPrefix(m.Path, "src/lib/"), m.Path)
	}

	// Rollback by label, then to the base.
	put := func(p, content string) {
		t.Helper()
		r := runCLI(t, content, "put", p)
		require.Equal(t, exitOK, r.code, r.stderr)
	}
	put("one.txt", "1\n")
	r := runCLI(t, "", "checkpoint", "--label", "first")
	require.Equal(t, exitOK, r.code, r.stderr)
	put("two.txt", "2\n")
	r = runCLI(t, "", "checkpoint", "--label", "second")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "", "rollback", "first")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, _, err = d.C.ReadFile(ctx, s.ID, "one.txt")
	require.NoError(t, err)
	_, _, err = d.C.ReadFile(ctx, s.ID, "two.txt")
	assert.Equal(t, apitypes.CodeNotFound, client.Code(err), "rolled back to the checkpoint labelled first")

	r = runCLI(t, "", "rollback", "no-such-label")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "not_found")

	r = runCLI(t, "", "rollback", "base")
	require.Equal(t, exitOK, r.code, r.stderr)
	es, err := d.C.Tree(ctx, s.ID, client.TreeOptions{Recursive: true, OnlyModified: true})
	require.NoError(t, err)
	assert.Empty(t, es, "rolled back to the base: no changes left")
	diff, err := d.C.Diff(ctx, s.ID, "")
	require.NoError(t, err)
	assert.Empty(t, string(diff))

	// Two checkpoints with one label: ambiguous, refused.
	r = runCLI(t, "", "checkpoint", "--label", "first")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "", "rollback", "first")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "give a number")
}

// TestCLIMergeFromToken: a session token reaches only its own session, so
// merging another session in needs that session's token as well.
func TestCLIMergeFromToken(t *testing.T) {
	plainRunOnly(t, "the CLI's merge against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--admin-token", "admin-secret")
	clientEnv(t, d, "")
	newSession := func() apitypes.Session {
		r := runCLI(t, "", "session", "new", "--repo", "r", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var s apitypes.Session
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
		require.NotEmpty(t, s.Token, "auth is on: a new session comes with its token")
		return s
	}
	a, b := newSession(), newSession()
	_, err := d.C.WriteFile(ctx, b.ID, "from-b.txt", []byte("b\n"), client.WriteOptions{})
	require.NoError(t, err)

	t.Setenv("SESSIOND_TOKEN", a.Token)
	t.Setenv("SESSIOND_SESSION", a.ID)
	r := runCLI(t, "", "merge", b.ID)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Contains(t, r.stderr, "forbidden")
	r = runCLI(t, "", "merge", b.ID, "--from-token", a.Token)
	assert.Equal(t, exitError, r.code, "a's own token does not reach b: %s", r.stderr)
	_, _, err = d.C.ReadFile(ctx, a.ID, "from-b.txt")
	require.Error(t, err, "refused merges change nothing")

	r = runCLI(t, "", "merge", b.ID, "--from-token", b.Token)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "merged "+b.ID+" into "+a.ID)
	got, _, err := d.C.ReadFile(ctx, a.ID, "from-b.txt")
	require.NoError(t, err)
	assert.Equal(t, "b\n", string(got))
}

// TestCLIHumanOutput: what the commands print for a person. A chmod to
// the mode a file has says that nothing changed; ls quotes unusual names
// as git does (core.quotePath), and so does every other line naming a
// repository path (grep, mutation summaries, the log, changeset show,
// accept and undo); changeset show --diff is coloured by the same rules
// as diff.
func TestCLIHumanOutput(t *testing.T) {
	plainRunOnly(t, "the CLI's output against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "odd"), 0o755))
	for _, name := range []string{"tab\there.txt", "new\nline.txt", `back\slash.txt`, `dq"uote.txt`, "plain name.txt", "é.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, "odd", name), []byte("x\n"), 0o644))
	}
	git(t, repo, "add", "odd")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "odd names")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)

	t.Run("chmod to the same mode", func(t *testing.T) {
		before, err := d.C.GetSession(ctx, s.ID)
		require.NoError(t, err)
		for _, args := range [][]string{{"chmod", "644", "README.md"}, {"put", "README.md", "--mode", "100644"}} {
			r := runCLI(t, "", args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "nothing changed", args)
			assert.NotContains(t, r.stdout, "→", args)
			assert.NotContains(t, r.stdout, "at seq", args)
		}
		after, err := d.C.GetSession(ctx, s.ID)
		require.NoError(t, err)
		assert.Equal(t, before.Seq, after.Seq, "nothing was recorded")

		r := runCLI(t, "", "chmod", "755", "README.md")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "100644 → 100755 at seq")
	})

	t.Run("ls quotes names as git ls-files does", func(t *testing.T) {
		r := runCLI(t, "", "ls", "odd")
		require.Equal(t, exitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		want := strings.Split(git(t, repo, "ls-files", "odd"), "\n")
		require.Len(t, lines, 1+len(want), "a header and one line per file:\n%s", r.stdout)
		for i, w := range want {
			assert.True(t, strings.HasSuffix(lines[1+i], " "+w), "line %q ends with git's %q", lines[1+i], w)
		}
		assert.Contains(t, want, `"odd/tab\there.txt"`, "git quotes it")
	})

	t.Run("changeset show --diff is coloured as diff is", func(t *testing.T) {
		r := runCLI(t, "hello\n", "put", "odd/plain name.txt")
		require.Equal(t, exitOK, r.code, r.stderr)
		sub := runCLI(t, "", "changeset", "submit", "-q")
		require.Equal(t, exitOK, sub.code, sub.stderr)
		cs := strings.TrimSpace(sub.stdout)
		plain, err := d.C.ChangesetDiff(ctx, cs)
		require.NoError(t, err)
		require.NotEmpty(t, plain)

		r = runCLI(t, "", "changeset", "show", cs, "--diff", "--color", "always")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, string(colorDiff(plain)), r.stdout)
		assert.Contains(t, r.stdout, "\x1b[32m+hello\x1b[m")
		for _, args := range [][]string{{"--color", "never"}, {"--color", "auto"}, {}} {
			r = runCLI(t, "", append([]string{"changeset", "show", cs, "--diff"}, args...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, string(plain), r.stdout, "not a terminal: %v", args)
		}
		r = runCLI(t, "", "changeset", "show", cs, "--diff", "--color", "sometimes")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "--color")
	})

	t.Run("changeset show prints the checks", func(t *testing.T) {
		r := runCLI(t, "", "changeset", "submit", "-q")
		require.Equal(t, exitOK, r.code, r.stderr)
		cs := strings.TrimSpace(r.stdout)
		r = runCLI(t, "", "changeset", "show", cs)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "checks: none")
		r = runCLI(t, "", "exec", "--", "sh", "-c", "exit 3")
		require.NotEqual(t, exitUsage, r.code, r.stderr)
		r = runCLI(t, "", "exec", "--", "true")
		require.Equal(t, exitOK, r.code, r.stderr)
		r = runCLI(t, "", "changeset", "show", cs)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "checks: failed\n")
		assert.Regexp(t, `(?m)^  passed  true: exit 0 in \S+$`, r.stdout)
		assert.Regexp(t, `(?m)^  failed  sh -c 'exit 3': exit 3 in \S+$`, r.stdout, "an argv is printed as a shell reads it back")
	})

	t.Run("every path printed is quoted as git quotes it", func(t *testing.T) {
		tab, nl, dq, e := "odd/tab\there.txt", "odd/new\nline.txt", `odd/dq"uote.txt`, "odd/é.txt"
		// git's own quoting of each name (core.quotePath), in the same
		// repository, and its grep of the session's base.
		quoted := func(p string) string {
			q := git(t, repo, "ls-files", "--", p)
			require.True(t, strings.HasPrefix(q, `"`), "git quotes %q: %s", p, q)
			return q
		}
		qt, qn, qd, qe := quoted(tab), quoted(nl), quoted(dq), quoted(e)
		gitGrep := strings.Split(git(t, repo, "grep", "-n", "-e", "^x$", "--", "odd"), "\n")
		require.Contains(t, gitGrep, qt+":1:x")

		s2, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
		require.NoError(t, err)
		clientEnv(t, d, s2.ID)
		_, err = d.C.SetRepoPolicy(ctx, "r", apitypes.RepoPolicy{AllowCheckedOut: new(true)})
		require.NoError(t, err)
		// The branch moves on a file the session reads: a stale read.
		require.NoError(t, os.WriteFile(filepath.Join(repo, nl), []byte("moved\n"), 0o644))
		git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "move a read file")

		var cs string
		for _, tc := range []struct {
			name  string
			stdin string
			args  []string // "CS" stands for the changeset submitted
			exact []string // the output is these lines
			want  []string // or has each of these in one of its lines
			save  *string  // keeps the trimmed output
		}{
			{name: "grep as git grep", args: []string{"grep", "^x$", "--prefix", "odd"}, exact: gitGrep},
			{name: "cat", args: []string{"cat", nl}, exact: []string{"x"}},
			// A base name with a tab stays readable and deletable, but the
			// write rules refuse it (badPathChar); a double quote or a
			// non-ASCII byte is written, and quoted too.
			{name: "put", stdin: "y\n", args: []string{"put", dq}, want: []string{"wrote " + qd + " (2 bytes, "}},
			{name: "chmod", args: []string{"chmod", "755", dq}, want: []string{"mode of " + qd + ": 100644 → 100755 at seq"}},
			{name: "chmod to the same mode", args: []string{"chmod", "755", dq}, want: []string{"mode of " + qd + " is already 100755"}},
			{name: "exec summary", args: []string{"exec", "--", "sh", "-c", `echo z >> "$1"`, "sh", e}, want: []string{"  M " + qe}},
			{name: "exec refusal", args: []string{"exec", "--", "sh", "-c", `echo z >> "$1"`, "sh", tab}, want: []string{"  " + qt + " (badPathChar): "}},
			{name: "rm", args: []string{"rm", tab}, want: []string{"deleted " + qt + " at seq"}},
			{name: "log", args: []string{"log"}, want: []string{" " + qd, " " + qe, " " + qt}},
			{name: "submit", args: []string{"changeset", "submit", "-q"}, save: &cs},
			{name: "review", args: []string{"changeset", "review", "CS", "--comment", tab + ":1:why"}, want: []string{"reviewed"}},
			{name: "show", args: []string{"changeset", "show", "CS"}, want: []string{"    " + qt + ":1: why"}},
			{name: "accept --dry-run", args: []string{"changeset", "accept", "CS", "--dry-run"},
				want: []string{" " + qd + " +1 -1", " " + qe + " +1 -0", " " + qt + " +0 -1", "  stale read: " + qn + " changed on main"}},
			{name: "accept --select", args: []string{"changeset", "accept", "CS", "--select", dq},
				want: []string{"  stale read: " + qn + " changed on main", "  left out: " + qe, "  left out: " + qt}},
			{name: "undo --dry-run", args: []string{"changeset", "undo", "CS", "--dry-run"}, want: []string{"  comes back: " + qd}},
		} {
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "CS" {
					args[i] = cs
				}
			}
			r := runCLI(t, tc.stdin, args...)
			require.Equal(t, exitOK, r.code, "%s: %s", tc.name, r.stderr)
			out := r.stdout + r.stderr
			if tc.save != nil {
				*tc.save = strings.TrimSpace(r.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if tc.exact != nil {
				assert.Equal(t, tc.exact, lines, tc.name)
			}
			for _, w := range tc.want {
				assert.True(t, slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }),
					"%s: a line has %q:\n%s", tc.name, w, out)
			}
		}
	})
}

// TestServeSaysWhyTheStoreIsNot: serve on a Postgres database that does
// not exist, or on a port where nothing listens, stops saying so in words
// a person can act on, and never with the URL's password.
func TestServeSaysWhyTheStoreIsNot(t *testing.T) {
	plainRunOnly(t, "the daemon's binary refusing its store")
	_ = freshSchema(t) // the server is there (or the test skips, or fails under CI)
	const password = "hunter2-not-for-logs"
	missing, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	cfg, err := pgx.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	missing.User, missing.Path = url.UserPassword(cfg.User, password), "/nosuchdb"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, tc := range []struct{ url, want string }{
		{missing.String(), `database \"nosuchdb\" does not exist`},
		{"postgres://sessiond:" + password + "@" + closed + "/test", "postgres at " + closed + ` (user \"sessiond\", database \"test\"): connection refused`},
	} {
		cmd := exec.Command(testdaemon.Binary, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--database-url", tc.url)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		assert.Contains(t, string(out), tc.want)
		assert.NotContains(t, string(out), password)
		assert.NotContains(t, string(out), "listening on")
	}
}

// TestCLINegativeValues: a flag given a negative value as the next
// argument ("--timeout -5s", which kong reads as short flags) reaches the
// flag, whose check says what it wants; arguments after "--" are the
// command's and stay as they are.
func TestCLINegativeValues(t *testing.T) {
	r := runCLI(t, "", "--session", "s", "exec", "--timeout", "-5s", "--", "true")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "exec: --timeout -5s: want a positive duration such as 30s or 10m")
	assert.NotContains(t, r.stderr, "short flag")
	r = runCLI(t, "", "--session", "s", "exec", "--timeout=-5s", "--", "true")
	assert.Contains(t, r.stderr, "exec: --timeout -5s: want a positive duration")
	r = runCLI(t, "", "session", "new", "--repo", "r", "--ttl", "-5s")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `--ttl: duration "-5s": want seconds (10) or a duration`)
	assert.NotContains(t, r.stderr, "short flag")

	joined, ok := joinNegativeValues([]string{"exec", "--timeout", "-5s", "--", "sort", "--key", "-1"})
	assert.True(t, ok)
	assert.Equal(t, []string{"exec", "--timeout=-5s", "--", "sort", "--key", "-1"}, joined)
	_, ok = joinNegativeValues([]string{"grep", "--ignore-case", "x"})
	assert.False(t, ok)
}

// TestCLIConnectionRefused: with no daemon where the client looks, a
// command says so, where, and how to start one.
func TestCLIConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	t.Setenv("SESSIOND_SERVER", url)
	for _, args := range [][]string{{"repo", "ls"}, {"--session", "s", "cat", "x"}} {
		r := runCLI(t, "", args...)
		assert.Equal(t, exitError, r.code, "%v", args)
		assert.Contains(t, r.stderr, "no daemon answers at "+url+" (connection refused): start one with `sessiond serve`", "%v", args)
		assert.NotContains(t, r.stderr, "dial tcp")
	}
}
