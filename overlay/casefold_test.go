package overlay

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
// (helpers_test.go has the same for the package's external tests.)
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}

// checkCaseByListing is the caseCollision check as it was first written,
// the obvious way: list the directory and fold every sibling. It is the
// oracle for checkCase's indexes.
func (o *Overlay) checkCaseByListing(ctx context.Context, p, name string) error {
	want := foldName(baseName(name))
	errFound := errors.New("found")
	var other string
	err := o.List(ctx, ListOptions{Prefix: parentDir(name)}, func(n Node) error {
		if foldName(baseName(n.Path)) == want {
			other = n.Path
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return pathErr(RuleCaseCollision, p, "%q differs from existing %q only in case or Unicode normalization", name, other)
	case err != nil:
		return fmt.Errorf("case check of %q: %w", p, err)
	}
	return nil
}

// newName is the first component of p that the merged view lacks (the
// name checkPutView hands to the case check), and whether every existing
// ancestor is a directory.
func newName(ctx context.Context, o *Overlay, p string) (string, bool) {
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		n, err := o.Stat(ctx, p[:i])
		if errors.Is(err, ErrNotFound) {
			return p[:i], true
		}
		if err != nil || i < len(p) && !n.IsDir() {
			return "", false
		}
	}
	return "", false
}

func openView(tb testing.TB, fixture string) (*gitstore.Repo, *gitstore.TreeView) {
	tb.Helper()
	repo, err := gitstore.Open(testrepo.Build(tb, fixture))
	require.NoError(tb, err)
	tb.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	commit, err := repo.ResolveRevision(ctx, "main")
	require.NoError(tb, err)
	c, err := repo.Commit(ctx, commit)
	require.NoError(tb, err)
	return repo, repo.View(c.Tree)
}

// The indexed case check says exactly what listing the directory says,
// error message included, after any writes, deletes and clones, for
// names that differ in case, in normalization or in both, within the
// overlay, against the base and across both.
func TestCheckCaseMatchesListing(t *testing.T) {
	plainRunOnly(t, "random steps on one overlay, its case check against a listing")
	ctx := context.Background()
	for _, fixture := range []string{"unicode", "small"} {
		t.Run(fixture, func(t *testing.T) {
			repo, view := openView(t, fixture)
			blob, err := repo.WriteBlob(ctx, []byte("x\n"))
			require.NoError(t, err)
			var paths []string
			require.NoError(t, view.List(ctx, "", true, func(e gitstore.Entry) error {
				paths = append(paths, e.Path)
				return nil
			}))
			names := []string{"x", "X", "caf\u00e9.txt", "cafe\u0301.txt", "CAF\u00c9.TXT", "stra\u00dfe", "STRASSE", "ss", "README.md", "readme.MD", "A", "a"}
			dirs := []string{"", "nfc", "NFC", "nfd", "new", "NEW", "new/sub", "a", "A", "docs", "Docs"}
			for _, d := range dirs {
				for _, n := range names {
					p := n
					if d != "" {
						p = d + "/" + n
					}
					paths = append(paths, p)
				}
			}
			rapid.Check(t, func(rt *rapid.T) {
				o := New(view, Options{})
				for range rapid.IntRange(1, 30).Draw(rt, "steps") {
					p := rapid.SampledFrom(paths).Draw(rt, "path")
					switch rapid.IntRange(0, 5).Draw(rt, "op") {
					case 0, 1, 2:
						// Bypass the rule so that the view can hold
						// collisions the check must then see.
						o.opts.AllowCaseCollisions = rapid.Bool().Draw(rt, "allow")
						_ = o.Put(ctx, p, blob, gitstore.ModeFile)
						o.opts.AllowCaseCollisions = false
					case 3:
						_ = o.Delete(ctx, p)
					case 4:
						o = o.Clone()
					case 5:
						_ = o.Clone().Put(ctx, p, blob, gitstore.ModeFile) // a clone's writes stay its own
					}
					for _, q := range paths {
						name, ok := newName(ctx, o, q)
						if !ok {
							continue
						}
						got, want := o.checkCase(ctx, q, name), o.checkCaseByListing(ctx, q, name)
						if fmt.Sprint(got) != fmt.Sprint(want) {
							rt.Fatalf("case check of %q (new name %q): got %v, listing says %v", q, name, got, want)
						}
					}
				}
			})
		})
	}
}

// Clones share the base's folded-name cache and may be used from
// different goroutines (a fork, a command's view): run with -race.
func TestClonesShareFoldCache(t *testing.T) {
	ctx := context.Background()
	repo, view := openView(t, "unicode")
	blob, err := repo.WriteBlob(ctx, []byte("x\n"))
	require.NoError(t, err)
	o := New(view, Options{})
	done := make(chan error, 2)
	for _, c := range []*Overlay{o.Clone(), o.Clone()} {
		go func() {
			var err error
			for _, d := range []string{"", "nfc/", "nfd/"} {
				err = errors.Join(err, c.Put(ctx, d+"new.txt", blob, gitstore.ModeFile))
				var pe *PathError
				if e := c.Put(ctx, d+"CAF\u00c9.TXT", blob, gitstore.ModeFile); !errors.As(e, &pe) || pe.Rule != RuleCaseCollision {
					err = errors.Join(err, fmt.Errorf("%s: %v, want a case collision", d, e))
				}
			}
			done <- err
		}()
	}
	require.NoError(t, <-done)
	require.NoError(t, <-done)
}
