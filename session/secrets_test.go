package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// TestExecSecrets: a command gets the repository's variables and secrets,
// then the session's, then the request's; its output is masked as it
// streams and in the result; a file holding a secret's value is refused
// with rule secret, written or captured; a changed secret applies at once.
func TestExecSecrets(t *testing.T) {
	plainRunOnly(t, "commands in namespaces with variables and secrets")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		ctx := t.Context()
		value := "hunter2-value"
		_, err := e.en.Repos.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{
			Env: map[string]string{"A": "repo", "B": "repo", "C": "repo"}, Secrets: map[string]*string{"TOKEN": &value}})
		require.NoError(t, err)
		s := e.create(session.CreateOptions{Env: map[string]string{"B": "session", "C": "session"}})

		// A follower of the session's commands sees them masked too.
		fl, err := e.en.Exec.FollowExec(ctx, s.ID)
		require.NoError(t, err)
		defer fl.Close()
		followed := make(chan string, 1)
		go func() {
			var b strings.Builder
			for {
				c, err := fl.Next(ctx)
				if err != nil || c.Kind == "end" {
					followed <- b.String()
					return
				}
				b.WriteString(strings.Join(c.Argv, " "))
				b.Write(c.Data)
			}
		}()
		var streamed strings.Builder
		res, err := e.en.Exec.Exec(ctx, s.ID, session.ExecOptions{
			Command: `echo "$A $B $C"; printf %s "${TOKEN%????}"; sleep 0.2; echo "${TOKEN#${TOKEN%????}}"; echo "$TOKEN" >&2`,
			Env:     map[string]string{"C": "request"},
			Output: func(stream string, p []byte) {
				if stream == "stdout" {
					streamed.Write(p)
				}
			},
		})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "repo session request\n***\n", string(res.Stdout))
		assert.Equal(t, "repo session request\n***\n", streamed.String())
		assert.Equal(t, "***\n", string(res.Stderr))
		got := <-followed
		assert.NotContains(t, got, value, "what a follower saw")
		assert.Contains(t, got, "repo session request\n***\n")

		_, _, err = e.m.Write(ctx, s.ID, "leak.txt", []byte("x"+value+"x"), session.WriteOptions{})
		var pe *overlay.PathError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.Equal(t, overlay.Rule(session.RuleSecret), pe.Rule)
		assert.NotContains(t, err.Error(), value)
		// A move or copy to a path holding the value: refused alike, the
		// path masked, nothing recorded.
		_, _, err = e.m.Write(ctx, s.ID, "plain.txt", []byte("plain\n"), session.WriteOptions{})
		require.NoError(t, err)
		before, err := e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		for what, try := range map[string]func() error{
			"move": func() error { _, err := e.m.Move(ctx, s.ID, "plain.txt", "x-"+value, ""); return err },
			"copy": func() error { _, err := e.m.Copy(ctx, s.ID, "plain.txt", "d/"+value+"/c.txt", ""); return err },
			"batch move": func() error {
				_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: session.OpMove, Path: "plain.txt", To: value}}, false, "")
				return err
			},
		} {
			err := try()
			require.True(t, errors.As(err, &pe), "%s: %v", what, err)
			assert.Equal(t, overlay.Rule(session.RuleSecret), pe.Rule, what)
			assert.NotContains(t, err.Error(), value, what)
		}
		after, err := e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		assert.Equal(t, before.Seq, after.Seq, "a refused move or copy records nothing")

		res = e.sh(s.ID, `echo "$TOKEN" > src/leak.txt; echo ok > src/ok.txt`)
		require.Len(t, res.Rejected, 1)
		assert.Equal(t, session.ExecRejection{Path: "src/leak.txt", Rule: session.RuleSecret, Message: "the content holds the value of secret TOKEN"}, res.Rejected[0])
		assert.Equal(t, "ok\n", e.read(s.ID, "src/ok.txt"))
		// A file named after a secret: refused, its path masked.
		res = e.sh(s.ID, `echo x > "src/$TOKEN.txt"`)
		require.Len(t, res.Rejected, 1)
		assert.Equal(t, session.ExecRejection{Path: "src/***.txt", Rule: session.RuleSecret, Message: "the path holds the value of secret TOKEN"}, res.Rejected[0])
		_, err = e.m.Stat(ctx, s.ID, "src/leak.txt")
		assert.Error(t, err, "the refused file was recorded")

		// A new value applies to the next command and write; the old one
		// is no secret any more.
		next := "second-value"
		_, err = e.en.Repos.SetEnvironment(ctx, "r", repos.EnvironmentUpdate{Secrets: map[string]*string{"TOKEN": &next}})
		require.NoError(t, err)
		res = e.sh(s.ID, `echo "$TOKEN $A"`)
		assert.Equal(t, "*** \n", string(res.Stdout), "env was replaced, the secret kept with its new value")
		e.write(s.ID, "old.txt", value)

		// A fork keeps the session's own variables.
		f, err := e.m.Fork(ctx, s.ID, session.ForkOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"B": "session", "C": "session"}, f.Env)
		res = e.sh(f.ID, `echo "$B $C"`)
		assert.Equal(t, "session session\n", string(res.Stdout))
		_, err = e.m.Create(ctx, session.CreateOptions{Repo: "r", Env: map[string]string{"A=B": "x"}})
		assert.ErrorIs(t, err, record.ErrInvalid)
	})
}
