package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A repository with an origin is a bare clone of a git URL that this
// process keeps for itself: Clone makes it, Fetch brings the origin's
// branches and tags into it (refs/heads/* and refs/tags/* mirror the
// origin's, pruned), and Publish moves a branch at the origin by
// compare-and-swap before it moves it here. The transport is git's own
// (the git command), so credentials come from git's usual environment:
// credential helpers, GIT_SSH_COMMAND, ~/.netrc, and the access token of
// TokenVariable. Nothing here reads the origin's directory itself, even
// for a file:// URL: git's transport does.

// TokenVariable names the environment variable whose value, when set, is
// the password git offers an https origin that asks for credentials (after
// any credential helper the user configured), with the user name of
// TokenUserVariable (default "x-access-token", which forges that take an
// access token as a password accept). The token reaches git through the
// environment only, never an argument, a URL or a file.
const (
	TokenVariable     = "SESSIOND_GIT_TOKEN"
	TokenUserVariable = "SESSIOND_GIT_USERNAME"
)

// originSchemes are the URL schemes an origin may have.
var originSchemes = []string{"https://", "ssh://", "git://", "file://"}

// IsOriginURL reports whether s is meant as an origin URL (it starts with
// one of the schemes an origin may have), not a local path.
func IsOriginURL(s string) bool {
	for _, p := range originSchemes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// CheckOriginURL checks that u is an origin git can fetch from: https,
// ssh, git or file, with a host (a path for file), and no password in it
// (credentials belong in git's environment, never in a URL that would be
// stored). Its error names the URL without its user information.
func CheckOriginURL(u string) error {
	if !IsOriginURL(u) {
		return fmt.Errorf("origin %q: want an https://, ssh://, git:// or file:// URL", RedactURL(u))
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("origin %q: not a URL", RedactURL(u))
	}
	if _, has := p.User.Password(); has {
		return fmt.Errorf("origin %s: a password in the URL: give credentials through git's credential helpers, GIT_SSH_COMMAND or %s instead", RedactURL(u), TokenVariable)
	}
	if p.Scheme == "file" {
		if p.Path == "" || p.Host != "" && p.Host != "localhost" {
			return fmt.Errorf("origin %s: want file:///absolute/path", RedactURL(u))
		}
	} else if p.Host == "" {
		return fmt.Errorf("origin %s: no host", RedactURL(u))
	}
	if strings.ContainsAny(u, "\x00\n\r") || strings.HasPrefix(p.Path, "-") {
		return fmt.Errorf("origin %s: not a URL git takes", RedactURL(u))
	}
	return nil
}

// RedactURL is u without the user information an error must not carry
// (the user name stays, a password goes).
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		if i := strings.Index(u, "@"); i >= 0 && IsOriginURL(u) {
			scheme, _, _ := strings.Cut(u, "://")
			return scheme + "://…@" + u[i+1:]
		}
		return u
	}
	if _, has := p.User.Password(); has {
		p.User = url.User(p.User.Username())
	}
	return p.String()
}

// gitTimeout bounds a git transport command whose context has no
// deadline of its own.
const gitTimeout = 5 * time.Minute

// runGit runs git with args for the repository at gitDir ("" for none),
// with the environment of the transport (gitEnv). Its error carries git's
// own last words, the origin's URL redacted.
func runGit(ctx context.Context, gitDir, origin string, args ...string) (stdout []byte, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, gitTimeout)
		defer cancel()
	}
	// No automatic gc or maintenance: the repository's housekeeping is
	// this package's (housekeep.go).
	full := []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.writeFetchHead=false"}
	if gitDir != "" {
		full = append(full, "--git-dir="+gitDir)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv()
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := lastLines(errb.String(), 4)
		if origin != "" {
			msg = strings.ReplaceAll(msg, origin, RedactURL(origin))
		}
		if ctx.Err() != nil {
			return out.Bytes(), fmt.Errorf("git %s: %w (%s)", args[0], ctx.Err(), msg)
		}
		if msg == "" {
			msg = err.Error()
		}
		return out.Bytes(), &GitError{Op: args[0], Message: msg}
	}
	return out.Bytes(), nil
}

// GitError is a git transport command that failed, with git's own words.
type GitError struct {
	Op      string // fetch, push, clone
	Message string
}

func (e *GitError) Error() string { return "git " + e.Op + ": " + e.Message }

// gitEnv is the environment of git's transport: this process's, without
// what would point git at another repository, never prompting, and with
// the access token of TokenVariable offered as a credential when set.
func gitEnv() []string {
	var env []string
	count := 0
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_NAMESPACE", "GIT_COMMON_DIR", "GIT_TERMINAL_PROMPT":
			continue
		case "GIT_CONFIG_COUNT":
			count, _ = strconv.Atoi(v)
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0")
	if os.Getenv(TokenVariable) != "" {
		// A credential helper that prints the token from the environment
		// when git asks: the value is in no argument and no file.
		helper := `!f() { test "$1" = get || exit 0; echo "username=${` + TokenUserVariable + `:-x-access-token}"; echo "password=$` + TokenVariable + `"; }; f`
		env = slicesDeleteKey(env, "GIT_CONFIG_COUNT")
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(count)+"=credential.helper",
			"GIT_CONFIG_VALUE_"+strconv.Itoa(count)+"="+helper,
			"GIT_CONFIG_COUNT="+strconv.Itoa(count+1))
	}
	return env
}

func slicesDeleteKey(env []string, key string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "; "))
}

// Clone makes path a bare clone of origin and opens it with opts (its
// Origin set to origin). When path already holds a repository (a clone
// made before), it is fetched into instead. A clone that fails leaves
// nothing at path.
func Clone(ctx context.Context, origin, path string, opts Options) (*Repo, error) {
	if err := CheckOriginURL(origin); err != nil {
		return nil, err
	}
	opts.Origin = origin
	if isGitDir(path) {
		r, err := Open(path, opts)
		if err != nil {
			return nil, err
		}
		if err := r.Fetch(ctx); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("clone %s: %w", RedactURL(origin), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".clone-")
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", RedactURL(origin), err)
	}
	defer os.RemoveAll(tmp)
	// A bare clone maps the origin's branches to refs/heads and its tags
	// to refs/tags, and takes its HEAD.
	if _, err := runGit(ctx, "", origin, "clone", "--bare", "--quiet", "--", origin, tmp); err != nil {
		return nil, fmt.Errorf("clone %s: %w", RedactURL(origin), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("clone %s: %w", RedactURL(origin), err)
	}
	return Open(path, opts)
}

// Origin returns the URL the repository is a clone of, "" for none.
func (r *Repo) Origin() string { return r.opts.Origin }

// Fetch brings the origin's branches and tags into the repository, each
// ref set to the origin's (forced) and refs the origin no longer has
// removed; refs elsewhere (a session's) are not touched. It does nothing
// for a repository without an origin. A ref this process is writing at
// the same moment makes git fail to lock it: Fetch tries again a few
// times.
func (r *Repo) Fetch(ctx context.Context) error {
	if r.opts.Origin == "" {
		return nil
	}
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		_, err = runGit(ctx, r.gitDir, r.opts.Origin, "fetch", "--quiet", "--prune", "--no-tags", "--", r.opts.Origin,
			"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
		var ge *GitError
		if err == nil || !errors.As(err, &ge) || !strings.Contains(ge.Message, "lock") {
			break
		}
		if serr := sleepCtx(ctx, time.Duration(attempt)*20*time.Millisecond); serr != nil {
			return serr
		}
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", RedactURL(r.opts.Origin), err)
	}
	return nil
}

// Publish moves ref from oldID (zero: the ref must not exist) to newID by
// compare-and-swap where the branch is shared: at the origin first when
// the repository has one, by an atomic push with a lease on oldID (git
// push --atomic --force-with-lease), then here; here only otherwise
// (UpdateRef). A ref the origin has elsewhere is *RefConflictError
// (ErrRefConflict), after a fetch brought the origin's value here, so
// that the caller's next ReadRef sees where it went. Another failure of
// the push leaves the outcome unknown to the caller only when the
// connection broke mid-way; a rejection is reported as such and moved
// nothing.
func (r *Repo) Publish(ctx context.Context, ref RefName, newID, oldID OID) error {
	if r.opts.Origin == "" {
		return r.UpdateRef(ctx, ref, newID, oldID)
	}
	if err := ValidateRefName(ref); err != nil {
		return err
	}
	lease := string(ref) + ":"
	if !oldID.IsZero() {
		lease += oldID.String()
	}
	out, err := runGit(ctx, r.gitDir, r.opts.Origin, "push", "--atomic", "--porcelain", "--no-verify",
		"--force-with-lease="+lease, "--", r.opts.Origin, newID.String()+":"+string(ref))
	if err != nil {
		if reason, rejected := pushRejection(out); rejected {
			if movedElsewhere(reason) {
				if ferr := r.Fetch(ctx); ferr != nil {
					return fmt.Errorf("push %s to %s: the branch moved there, and fetching it failed: %w", ref, RedactURL(r.opts.Origin), ferr)
				}
				cur, _ := r.ReadRef(ctx, ref)
				return &RefConflictError{Name: ref, Current: cur}
			}
			return fmt.Errorf("push %s to %s: rejected: %s", ref, RedactURL(r.opts.Origin), reason)
		}
		return fmt.Errorf("push %s to %s: %w", ref, RedactURL(r.opts.Origin), err)
	}
	// The origin has it; here it follows. A fetch that ran meanwhile may
	// have brought it (or later commits) already.
	if err := r.UpdateRef(ctx, ref, newID, oldID); err != nil {
		if !errors.Is(err, ErrRefConflict) && !errors.Is(err, ErrRefLocked) {
			return fmt.Errorf("%s was pushed to the origin, but not updated here: %w", ref, err)
		}
		if ferr := r.Fetch(ctx); ferr != nil {
			return fmt.Errorf("%s was pushed to the origin, but not updated here: %w", ref, ferr)
		}
	}
	return nil
}

// pushRejection finds the reason of a refused ref in git push's
// porcelain output ("!<TAB>src:dst<TAB>[rejected] (stale info)").
func pushRejection(out []byte) (string, bool) {
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "!") {
			continue
		}
		f := strings.Split(line, "\t")
		return strings.TrimSpace(f[len(f)-1]), true
	}
	return "", false
}

// movedElsewhere says whether a push's rejection is a lost
// compare-and-swap: the ref is not where the lease said (checked by the
// client against what the origin advertised, or by the origin under its
// lock), rather than a hook or a permission refusing it.
func movedElsewhere(reason string) bool {
	if strings.HasPrefix(reason, "[rejected]") {
		return true // stale info, fetch first, non-fast-forward, already exists
	}
	for _, s := range []string{"cannot lock ref", "failed to lock", "is at", "but expected", "failed to update ref", "atomic push failed", "atomic transaction failed"} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
