package testrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The identity and date every git command run through this package uses, so
// commits made by tests have the same ids on every machine and every run.
const (
	AuthorName     = "Test Author"
	AuthorEmail    = "author@example.com"
	CommitterName  = "Test Committer"
	CommitterEmail = "committer@example.com"
	// Date is in git's internal format: seconds since the epoch and a zone.
	Date = "1700000000 +0000"
)

// hermeticConfig is passed through GIT_CONFIG_COUNT so that it wins over
// anything git might still find, and so it applies to every subcommand.
var hermeticConfig = [][2]string{
	{"init.defaultBranch", "main"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"core.autocrlf", "false"},
	{"advice.detachedHead", "false"},
	{"protocol.file.allow", "always"},
}

// Env returns the environment Git runs the git CLI in: the caller's
// environment without any GIT_*, locale or home settings, plus no system or
// global config, a fixed identity and date, the C locale and no prompts.
// It is exported for code that must start git itself (for example to stream
// into it) but wants the same hermetic behaviour.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_"), strings.HasPrefix(k, "LC_"),
			k == "HOME", k == "XDG_CONFIG_HOME", k == "LANG", k == "LANGUAGE",
			k == "EMAIL", k == "PAGER":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		// With GIT_CONFIG_GLOBAL set git never reads $HOME/.gitconfig; a home
		// that cannot hold files keeps anything else from leaking in.
		"HOME="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME="+AuthorName,
		"GIT_AUTHOR_EMAIL="+AuthorEmail,
		"GIT_AUTHOR_DATE="+Date,
		"GIT_COMMITTER_NAME="+CommitterName,
		"GIT_COMMITTER_EMAIL="+CommitterEmail,
		"GIT_COMMITTER_DATE="+Date,
		"LC_ALL=C",
		"LANG=C",
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(hermeticConfig)),
	)
	for i, kv := range hermeticConfig {
		env = append(env,
			fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]),
			fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// Git runs the git CLI in dir with the hermetic environment of Env and
// returns its standard output with surrounding white space trimmed. On
// failure it fails the test with git's standard error. Use GitRaw where the
// output must stay byte-exact (blob contents, -z listings).
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return GitInput(tb, dir, nil, args...)
}

// GitInput is Git with stdin fed to the command.
func GitInput(tb testing.TB, dir string, stdin []byte, args ...string) string {
	tb.Helper()
	return strings.TrimSpace(string(GitRaw(tb, dir, stdin, args...)))
}

// GitRaw is GitInput returning standard output untouched.
func GitRaw(tb testing.TB, dir string, stdin []byte, args ...string) []byte {
	tb.Helper()
	// Not tb.Context(): that is cancelled before Cleanup functions run, and
	// cleanups are a common place to inspect a repository.
	out, err := run(context.Background(), dir, bytes.NewReader(stdin), args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// run starts git in dir with Env and returns its standard output.
func run(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	cmd.Stdin = stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("git %s (in %q): %w\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}
