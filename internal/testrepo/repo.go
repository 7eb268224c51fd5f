package testrepo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// ModulePath is the module whose root holds testdata/ and .cache/.
const ModulePath = "github.com/sessiond/sessiond"

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// ModuleRoot returns the directory of the sessiond go.mod. It walks up from
// the working directory (a test binary runs in its package directory, a
// command usually somewhere in the checkout) and falls back to the directory
// this source file was compiled from.
func ModuleRoot() (string, error) {
	rootOnce.Do(func() {
		var starts []string
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			starts = append(starts, filepath.Dir(file))
		}
		for _, start := range starts {
			for dir := start; ; dir = filepath.Dir(dir) {
				if isModuleRoot(dir) {
					rootDir = dir
					return
				}
				if filepath.Dir(dir) == dir {
					break
				}
			}
		}
		rootErr = fmt.Errorf("testrepo: no go.mod for module %s above %q", ModulePath, starts)
	})
	return rootDir, rootErr
}

// isModuleRoot reports whether dir/go.mod declares ModulePath.
func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == ModulePath
		}
	}
	return false
}

// FixturesDir returns the directory of the fixture streams, testdata/repos.
func FixturesDir(tb testing.TB) string {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "testdata", "repos")
}

// Fixtures returns the names of all fixtures, sorted, for tests that run
// against every one of them.
func Fixtures(tb testing.TB) []string {
	tb.Helper()
	matches, err := filepath.Glob(filepath.Join(FixturesDir(tb), "*.fi"))
	if err != nil {
		tb.Fatal(err)
	}
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".fi"))
	}
	sort.Strings(names)
	return names
}

// Init creates an empty non-bare repository whose HEAD is the unborn
// branch main, in a fresh temporary directory, and returns its path.
func Init(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	Git(tb, dir, "init", "-q", "-b", "main")
	return dir
}

// InitBare is Init for a bare repository; the path returned is the git
// directory itself.
func InitBare(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	Git(tb, dir, "init", "-q", "--bare", "-b", "main")
	return dir
}

// Build imports the fixture testdata/repos/<name>.fi into a fresh non-bare
// repository, checks out main so the work tree and index match it, and
// returns the work tree's path. Every call gets its own copy, so the test
// may change it freely.
func Build(tb testing.TB, name string) string {
	tb.Helper()
	dir := Init(tb)
	importFixture(tb, dir, name)
	Git(tb, dir, "checkout", "-q", "-f", "main")
	return dir
}

// BuildBare imports the fixture testdata/repos/<name>.fi into a fresh bare
// repository and returns its path.
func BuildBare(tb testing.TB, name string) string {
	tb.Helper()
	dir := InitBare(tb)
	importFixture(tb, dir, name)
	return dir
}

func importFixture(tb testing.TB, dir, name string) {
	tb.Helper()
	stream, err := os.ReadFile(filepath.Join(FixturesDir(tb), name+".fi"))
	if errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("testrepo: no fixture %q; have %q", name, Fixtures(tb))
	}
	if err != nil {
		tb.Fatal(err)
	}
	GitInput(tb, dir, stream, "fast-import", "--quiet", "--done")
}

// CloneShared makes a cheap writable copy of the repository at src: a bare
// clone whose objects/info/alternates points at src's object store, so no
// object is copied. Refs (branches and tags) are copied. Writes to the
// clone never touch src, but the clone breaks if src's objects go away, so
// src must outlive it and must not be pruned; use it for repositories that
// are read-only by convention, such as CachedSynthetic's.
func CloneShared(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "clone.git")
	Git(tb, "", "clone", "-q", "--bare", "--shared", "--", src, dst)
	return dst
}
