package session_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/session"
)

// crashOp is one operation the parent asks the child to do.
type crashOp struct {
	Op      string `json:"op"` // write, delete, checkpoint
	Path    string `json:"path,omitempty"`
	Content string `json:"content,omitempty"`
}

const crashEnv = "SESSIOND_CRASH_CHILD"

// TestCrashRecovery drives a child process through random operations on
// one session, kills it with SIGKILL at random moments (200 times), and
// after each kill checks that the recovered overlay, mutation log and
// checkpoints equal the model of every acknowledged operation. The one
// operation in flight at the kill may or may not have committed; the
// store's sequence number and checkpoint count tell which, and the model
// follows.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		crashChild()
		return
	}
	kills := 200
	if testing.Short() {
		kills = 20
	}
	e := newEnv(t, "small")
	s := e.create(sessionOpts())
	require.NoError(t, e.en.Close())
	require.NoError(t, e.store.Close())

	model := e.treeModesPlain(t)
	var log []string // paths of every committed mutation, in order
	var checkpoints []map[string]string
	var trees []gitstore.OID // trees of the checkpoints verified so far
	verified := 0
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"x", "y", "z.txt", "w"}
	for kill := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$")
		cmd.Env = append(os.Environ(), crashEnv+"="+e.dataDir, "SESSIOND_CRASH_REPO="+e.repoDir, "SESSIOND_CRASH_SESSION="+s.ID.String())
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		acks := bufio.NewScanner(stdout)
		require.True(t, acks.Scan(), "child did not start")
		require.Equal(t, "ready", acks.Text())

		// Send operations; kill after a random number of acknowledgements,
		// with the next operation in flight.
		killAfter := rng.IntN(8)
		var inflight *crashOp
		for i := 0; ; i++ {
			op := crashOp{Op: "write", Path: names[rng.IntN(len(names))] + "/" + names[rng.IntN(len(names))], Content: fmt.Sprintf("kill %d op %d\n", kill, i)}
			switch r := rng.IntN(10); {
			case r < 2 && len(model) > 0:
				op = crashOp{Op: "delete", Path: anyKey(rng, model)}
			case r == 2 && rng.IntN(2) == 0:
				op = crashOp{Op: "checkpoint"}
			}
			if op.Op == "write" && blockedPlain(model, op.Path) {
				continue
			}
			b, _ := json.Marshal(op)
			fmt.Fprintf(stdin, "%s\n", b)
			if i == killAfter {
				// Let it get part way, then kill it.
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				inflight = &op
				break
			}
			require.True(t, acks.Scan(), "child died: kill %d op %d", kill, i)
			require.Equal(t, "ack", acks.Text())
			applyCrashOp(op, model, &log, &checkpoints)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		io.Copy(io.Discard, stdout)
		cmd.Wait()

		// Recover and compare.
		e.open()
		ctx := t.Context()
		muts, err := e.m.Mutations(ctx, s.ID, 0, 0)
		require.NoError(t, err)
		cps, err := e.m.Checkpoints(ctx, s.ID)
		require.NoError(t, err)
		// The operation in flight at the kill committed or did not; the
		// counts say which.
		committed := len(muts) == len(log)+1
		if inflight.Op == "checkpoint" {
			committed = len(cps) == len(checkpoints)+1
		}
		if committed {
			applyCrashOp(*inflight, model, &log, &checkpoints)
		}
		require.Equal(t, model, plain(e.view(s.ID)), "kill %d: view", kill)
		require.Len(t, muts, len(log), "kill %d: mutation log", kill)
		for i, mu := range muts {
			require.Equal(t, int64(i+1), mu.Seq)
			require.Equal(t, []string{log[i]}, mu.Paths, "kill %d: mutation %d", kill, i+1)
		}
		require.Len(t, cps, len(checkpoints), "kill %d: checkpoints", kill)
		for i, cp := range cps {
			if i < verified {
				// Checked after an earlier kill: it must not have changed.
				require.Equal(t, trees[i], cp.Tree, "kill %d: checkpoint %d", kill, i+1)
				continue
			}
			require.Equal(t, checkpoints[i], e.treeFiles(cp.Tree), "kill %d: checkpoint %d", kill, i+1)
			trees = append(trees, cp.Tree)
			verified++
		}
		require.NoError(t, e.en.Close())
		require.NoError(t, e.store.Close())
	}
	testrepoFsck(t, e)
}

func applyCrashOp(op crashOp, model map[string]string, log *[]string, cps *[]map[string]string) {
	switch op.Op {
	case "write":
		if model[op.Path] == op.Content {
			return // no change, no mutation
		}
		model[op.Path] = op.Content
		*log = append(*log, op.Path)
	case "delete":
		delete(model, op.Path)
		*log = append(*log, op.Path)
	case "checkpoint":
		*cps = append(*cps, maps.Clone(model))
	}
}

func anyKey(rng *rand.Rand, m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slicesSort(keys)
	return keys[rng.IntN(len(keys))]
}

func blockedPlain(model map[string]string, p string) bool {
	m := make(map[string]file, len(model))
	for k := range model {
		m[k] = file{}
	}
	return blocked(m, p)
}

func plain(v map[string]string) map[string]string { return v }

func (e *env) treeModesPlain(t *testing.T) map[string]string {
	return e.treeFiles(e.oid("main^{tree}"))
}

// crashChild runs operations read from stdin, one per line, printing
// "ack" after each has returned successfully.
func crashChild() {
	ctx := context.Background()
	dataDir := os.Getenv(crashEnv)
	st, err := db.OpenSQLite(ctx, filepath.Join(dataDir, "sessiond.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	m := testengine.New(st, dataDir, session.Config{}).Sessions
	id := uuid.MustParse(os.Getenv("SESSIOND_CRASH_SESSION"))
	if _, err := m.Get(ctx, id); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var op crashOp
		if err := json.Unmarshal(in.Bytes(), &op); err != nil {
			os.Exit(2)
		}
		switch op.Op {
		case "write":
			_, _, err = m.Write(ctx, id, op.Path, []byte(op.Content), session.WriteOptions{})
		case "delete":
			_, err = m.Delete(ctx, id, op.Path, false, "")
		case "checkpoint":
			_, err = m.Checkpoint(ctx, id, "", "")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", op, err)
			os.Exit(2)
		}
		fmt.Fprintln(out, "ack")
		out.Flush()
	}
	os.Exit(0)
}

var _ = strings.Cut
