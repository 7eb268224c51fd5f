package db

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// TestCrash kills a writing child process with SIGKILL at random moments.
// After each kill the store is opened again and must hold every write the
// child reported as committed, with a gap-free mutation log and an overlay
// that agrees with it.
func TestCrash(t *testing.T) {
	plainRunOnly(t, "a child process writing alone, killed")
	const rounds = 8
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.fresh(t)
			s, err := b.open(t.Context(), dsn)
			require.NoError(t, err)
			mkRepo(t, s, "r")
			ss := mkSession(t, s, "r", nil)
			require.NoError(t, s.Close())

			reported := map[int64]string{} // seq → path, from every round
			for round := range rounds {
				lines := runAndKill(t, childCommand(t, b, dsn, ss.ID, "crash"))
				require.NotEmpty(t, lines, "round %d: the child reported no commit", round)
				for _, l := range lines {
					var (
						seq  int64
						path string
						i    int
					)
					_, err := fmt.Sscanf(l, "ok %d %s %d", &seq, &path, &i)
					require.NoError(t, err, "line %q", l)
					reported[seq] = path
				}

				s := b.openStore(t, dsn)
				ms, entries, sess := settledState(t, s, ss.ID)
				last := map[string]gitstore.OID{}
				for i, m := range ms {
					require.Equal(t, int64(i+1), m.Seq, "round %d: the log has a gap", round)
					last[m.Paths[0]] = m.New[0]
				}
				for seq, path := range reported {
					require.LessOrEqual(t, seq, int64(len(ms)), "round %d: committed mutation %d lost", round, seq)
					assert.Equal(t, []string{path}, ms[seq-1].Paths)
				}
				got := map[string]gitstore.OID{}
				for _, e := range entries {
					got[e.Path] = e.Blob
				}
				assert.Equal(t, last, got, "round %d: overlay and log disagree", round)
				assert.Equal(t, int64(len(ms)), sess.Seq)
				require.NoError(t, s.Close())
				t.Logf("round %d: %d reported, %d in the log", round, len(lines), len(ms))
			}
		})
	}
}

// settledState reads a session's log, overlay and row once no commit lands
// between the reads. A Postgres server finishes a COMMIT that a killed
// client had already sent, so the dead child's last transaction may become
// visible a moment after the kill; every read before it settles would see
// a consistent but moving store.
func settledState(t *testing.T, s session.Store, id uuid.UUID) ([]session.MutationRecord, []session.OverlayEntry, session.Session) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		before, err := s.GetSession(t.Context(), id)
		require.NoError(t, err)
		ms, err := s.ListMutations(t.Context(), id, 0, 0)
		require.NoError(t, err)
		entries, err := s.ListOverlay(t.Context(), id)
		require.NoError(t, err)
		after, err := s.GetSession(t.Context(), id)
		require.NoError(t, err)
		if before.Seq == after.Seq || attempt == 20 {
			return ms, entries, after
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAndKill starts cmd, lets it write for a random while after its first
// reported commit, kills it with SIGKILL and returns its complete stdout
// lines.
func runAndKill(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1<<16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return // a line cut by the kill was not reported
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	var all []string
	select {
	case l := <-lines:
		all = append(all, l)
	case <-done:
	case <-time.After(30 * time.Second):
	}
	time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	<-done
	_ = cmd.Wait()
	close(lines)
	for l := range lines {
		all = append(all, l)
	}
	return all
}
