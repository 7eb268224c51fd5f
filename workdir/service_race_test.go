package workdir_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/workdir"
)

// swapScript keeps swapping, as fast as it can, the view's directory a
// for a link to the host directory (argv 1) and its file r.txt for a
// link to the host's sentinel, and back: a service racing the daemon,
// which meanwhile edits a/x and reads r.txt.
const swapScript = `import os, shutil, sys
host = sys.argv[1]
k = 0
def put_link(name, target):
    # A fresh name each time: the daemon may change the layer under the
    # service's mount, whose cache of names then lags.
    global k
    k += 1
    tmp = "%s.%d" % (name, k)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, name)
    except OSError:
        shutil.rmtree(name, ignore_errors=True)
        os.replace(tmp, name)
while True:
    try:
        put_link("a", host)
        put_link("r.txt", os.path.join(host, "x"))
        os.unlink("a")
        os.mkdir("a")
        k += 1
        with open("r.%d" % k, "w") as f:
            f.write("plain\n")
        os.replace("r.%d" % k, "r.txt")
    except OSError:
        pass
`

// A service lives beside the daemon's edits of its view: however it
// swaps the view's paths for links out of it while the daemon syncs API
// writes in, settles refused paths and captures, nothing outside the
// view is removed, written or read.
func TestEscapeServiceSwapsLinks(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			m := newManagerIn(t, outsideDir(t), mode, nil)
			if !m.Isolated() {
				t.Skip("no namespaces here: an unisolated service writes anywhere the daemon's user may (documented)")
			}
			// The host's directory, which the daemon must never reach.
			host := t.TempDir()
			const sentinel = "HOST-SENTINEL\n"
			require.NoError(t, os.WriteFile(filepath.Join(host, "x"), []byte(sentinel), 0o644))
			f := newFixture(t)
			f.write("a/x", "api 0\n", gitstore.ModeFile)

			s, err := m.Prepare(t.Context(), f.view())
			require.NoError(t, err)
			sv, err := s.Serve(workdir.Command{Argv: []string{"python3", "-c", swapScript, host}})
			require.NoError(t, err)
			t.Cleanup(func() { sv.Kill() })
			require.NoError(t, s.Settle(t.Context(), f.view(), nil))

			// One round: an API write synced in, a capture, the refused
			// paths settled back. It says whether the capture saw the
			// service's swaps.
			refused := 0
			round := func(i int) (saw bool) {
				f.write("a/x", "api "+strconv.Itoa(i)+"\n", gitstore.ModeFile)
				s, err := m.Prepare(t.Context(), f.view())
				if err != nil {
					// Refused (a path of the view led out of it): the
					// next Prepare rebuilds the layer.
					refused++
					return false
				}
				cs, err := s.CaptureNow(t.Context(), f.view(), 0)
				if err != nil {
					refused++
					s.Abort()
					return false
				}
				for _, c := range cs {
					assert.NotContains(t, string(c.Data), strings.TrimSpace(sentinel), "capture read the host's file through %q", c.Path)
					saw = saw || c.Path == "r.txt" || c.Path == "a" || strings.HasPrefix(c.Path, "a/")
				}
				// Nothing recorded: each path goes back to the record.
				_ = s.Settle(t.Context(), f.view(), append(paths(cs), "a", "a/x", "r.txt"))
				return saw
			}
			awaitLayerFile(t, m, sv, "r.txt")
			i := 0
			active := 0
			for range rounds {
				i++
				if round(i) {
					active++
				}
			}
			t.Logf("%d of %d rounds saw the service's swaps; %d preparations or captures refused", active, rounds, refused)
			select {
			case <-sv.Done():
				res, err := sv.Result()
				t.Fatalf("the service ended early: %v %s", err, res.Stderr)
			default:
			}
			sv.Stop(time.Second)

			ents, err := os.ReadDir(host)
			require.NoError(t, err)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			assert.Equal(t, []string{"x"}, names, "nothing was added to or removed from the host's directory")
			b, err := os.ReadFile(filepath.Join(host, "x"))
			if assert.NoError(t, err) {
				assert.Equal(t, sentinel, string(b), "the host's file is as it was")
			}
		})
	}
}
