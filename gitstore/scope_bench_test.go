package gitstore_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// scopeBench is the 100,000-file repository (a shared clone) with
// history commits on main below its tip, two sessions' refs beside
// them, and sessions more refs directories the refs listing must not walk.
type scopeBench struct {
	dir                    string
	tip, deep              string // main, and the oldest commit of the history
	ownCP, otherCP         string // a checkpoint of the caller's session, of another one
	own                    *gitstore.Scope
	history, otherSessions int
}

func loadScopeBench(b *testing.B, history, sessions int) *scopeBench {
	b.Helper()
	dir := testrepo.CloneShared(b, testrepo.CachedSynthetic(b, testrepo.DefaultSyntheticFiles))
	base := testrepo.Git(b, dir, "rev-parse", "main")
	tree := testrepo.Git(b, dir, "rev-parse", "main^{tree}")
	// History: commits of the same tree, a minute apart, newest on main.
	var fi strings.Builder
	for i := range history {
		fmt.Fprintf(&fi, "commit refs/heads/main\ncommitter C <c@example.com> %d +0000\ndata <<EOF\nhistory %d\nEOF\n", 1700000060+60*i, i)
		if i == 0 {
			fmt.Fprintf(&fi, "from %s\n", base)
		}
		fmt.Fprintf(&fi, "M 040000 %s \"\"\n\n", tree)
	}
	for i := range sessions + 2 {
		fmt.Fprintf(&fi, "commit refs/sessions/s%d/checkpoints/1\ncommitter C <c@example.com> %d +0000\ndata <<EOF\ncheckpoint of s%d\nEOF\nfrom refs/heads/main\nM 644 inline s%d.txt\ndata <<EOF\nunaccepted %d\nEOF\n\n",
			i, 1700000060+60*history+i, i, i, i)
	}
	fi.WriteString("done\n")
	testrepo.GitInput(b, dir, []byte(fi.String()), "fast-import", "--quiet", "--done")
	// As git keeps history: one pack with deltas, the refs packed.
	testrepo.Git(b, dir, "repack", "-a", "-d", "-l", "-q")
	testrepo.Git(b, dir, "pack-refs", "--all")
	s := &scopeBench{dir: dir, history: history, otherSessions: sessions,
		tip: testrepo.Git(b, dir, "rev-parse", "main"), deep: testrepo.Git(b, dir, "rev-parse", fmt.Sprintf("main~%d", history-1)),
		ownCP: testrepo.Git(b, dir, "rev-parse", "refs/sessions/s0/checkpoints/1"), otherCP: testrepo.Git(b, dir, "rev-parse", "refs/sessions/s1/checkpoints/1"),
		own: &gitstore.Scope{Own: "refs/sessions/s0/"}}
	return s
}

// BenchmarkResolveScoped resolves revisions as a session token does
// (ResolveRevisionIn) on the 100,000-file repository with 10,000 commits of
// history and 1,000 other sessions' refs: by name, a branch tip and the
// session's own checkpoint by id, the oldest commit of the history by id
// (reach=kept: what a running daemon has; reach=dropped: the first query
// of a fresh Repo, which walks the whole history; reach=after-push: main
// fast-forwards by one commit before each query), and another session's
// checkpoint by full and abbreviated id (refused). Beside it, the whole
// repository's ResolveRevision, `git rev-parse --verify` and `git
// merge-base --is-ancestor` on the same revisions, in the same run.
func BenchmarkResolveScoped(b *testing.B) {
	s := loadScopeBench(b, 10_000, 1_000)
	type probe struct {
		name, rev string
		refused   bool
	}
	probes := []probe{
		{"name=branch", "main", false},
		{"id=tip", s.tip, false},
		{"id=own-checkpoint-short", s.ownCP[:10], false},
		{"id=deep", s.deep, false},
		{"id=other-checkpoint", s.otherCP, true},
		{"id=other-checkpoint-short", s.otherCP[:10], true},
	}
	for _, p := range probes {
		b.Run(p.name+"/impl=sessiond-scoped", func(b *testing.B) {
			r := open(b, s.dir)
			ctx := b.Context()
			_, err := r.ResolveRevisionIn(ctx, s.own, s.deep) // the walk a running daemon has done
			require.NoError(b, err)
			for b.Loop() {
				_, err := r.ResolveRevisionIn(ctx, s.own, p.rev)
				if (err != nil) != p.refused {
					b.Fatal(p.rev, err)
				}
			}
		})
		b.Run(p.name+"/impl=sessiond-whole", func(b *testing.B) {
			r := open(b, s.dir)
			ctx := b.Context()
			for b.Loop() {
				if _, err := r.ResolveRevision(ctx, p.rev); err != nil {
					b.Fatal(p.rev, err)
				}
			}
		})
		b.Run(p.name+"/impl=git-rev-parse", func(b *testing.B) {
			for b.Loop() {
				gitRun(b, s.dir, "rev-parse", "--verify", "-q", p.rev+"^{commit}")
			}
		})
	}
	b.Run("id=deep/reach=dropped/impl=sessiond-scoped", func(b *testing.B) {
		r := open(b, s.dir)
		ctx := b.Context()
		for b.Loop() {
			gitstore.DropReach(r)
			if _, err := r.ResolveRevisionIn(ctx, s.own, s.deep); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("id=deep/reach=dropped/impl=git-merge-base-is-ancestor", func(b *testing.B) {
		for b.Loop() {
			gitRun(b, s.dir, "merge-base", "--is-ancestor", s.deep, "main")
		}
	})
	b.Run("id=deep/reach=after-push/impl=sessiond-scoped", func(b *testing.B) {
		r := open(b, s.dir)
		ctx := b.Context()
		_, err := r.ResolveRevisionIn(ctx, s.own, s.deep)
		require.NoError(b, err)
		head, err := r.ReadRef(ctx, "refs/heads/main") // where an earlier run left it
		require.NoError(b, err)
		tree := oid(b, testrepo.Git(b, s.dir, "rev-parse", "main^{tree}"))
		when := time.Unix(1700000060+60*int64(s.history+s.otherSessions+10), 0)
		for b.Loop() {
			when = when.Add(time.Minute)
			b.StopTimer()
			next, err := r.WriteCommit(ctx, gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{head},
				Author: gitstore.Signature{Name: "C", Email: "c@example.com", When: when}, Message: "push"})
			require.NoError(b, err)
			require.NoError(b, r.UpdateRef(ctx, "refs/heads/main", next, head))
			head = next
			b.StartTimer()
			if _, err := r.ResolveRevisionIn(ctx, s.own, s.deep); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gitRun runs git in dir; a non-zero exit is the answer, not a failure.
func gitRun(b *testing.B, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			b.Fatal(err)
		}
	}
}
