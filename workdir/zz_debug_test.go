package workdir_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/workdir"
)

func BenchmarkZZDebug(b *testing.B) {
	br := loadBench(b)
	ctx := context.Background()
	m := benchManager(b, workdir.ModeOverlay, b.TempDir())
	head := mustRevB(b, br, "main")
	g := &workdir.Git{Branch: "sessiond/bench", Head: head, HeadTree: br.tree, BaseRef: "main", BaseCommit: head,
		UserName: "bench", UserEmail: "bench@sessiond", RepoGitDir: br.dir, RepoName: "bench",
		Branches: []workdir.GitRef{{Name: "main", OID: head}}}
	edit := ""
	for _, p := range br.spread(10) {
		edit += fmt.Sprintf("echo changed >> %s\n", p)
	}
	s, err := m.Prepare(ctx, br.view("x"))
	require.NoError(b, err)
	res, err := s.Run(ctx, workdir.Command{Argv: []string{"/bin/sh", "-c", edit + "git status --porcelain >/dev/null; GIT_TRACE2_PERF=1 git -c core.preloadIndex=false status --porcelain 2>&1 | grep -E 'region_leave|exit' | cut -c 60-; ls -la .git/index"}, Git: g})
	require.NoError(b, err)
	require.NoError(b, os.WriteFile("/tmp/zz_trace.txt", append(res.Stdout, res.Stderr...), 0o644))
}
