package testrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// markerFile is written last into a cached synthetic repository; a
// directory without it, or with another generator's marker, is not used.
const markerFile = "sessiond-synthetic"

// cacheMu keeps parallel tests of one process from building the same
// repository twice; other processes are handled by the atomic rename.
var cacheMu sync.Mutex

// CachedSynthetic returns the synthetic repository of files files and seed
// SyntheticSeed (see Synthetic), building it the first time under
// <module root>/.cache/repos/synthetic-<files>-<seed>/ and reusing it after
// that, across test runs and packages.
//
// The repository is shared: tests and benchmarks must only read it. To
// write, take a CloneShared copy, which shares its objects and costs almost
// nothing.
func CachedSynthetic(tb testing.TB, files int) string {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := EnsureSynthetic(filepath.Join(root, ".cache", "repos"), files, SyntheticSeed)
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// EnsureSynthetic returns cacheDir/synthetic-<files>-<seed>, a bare
// repository written by Synthetic, building it unless a complete one by the
// current generator is already there. The build happens in a temporary
// directory next to it that is renamed into place, so a reader never sees
// a half-built repository, and concurrent builders (test binaries of other
// packages) agree on one result.
func EnsureSynthetic(cacheDir string, files, seed int) (string, error) {
	if files <= 0 {
		files = DefaultSyntheticFiles
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()

	dir := filepath.Join(cacheDir, fmt.Sprintf("synthetic-%d-%d", files, seed))
	want := fmt.Sprintf("version=%d files=%d seed=%d\n", syntheticVersion, files, seed)
	if complete(dir, want) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("synthetic cache: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".tmp-synthetic-")
	if err != nil {
		return "", fmt.Errorf("synthetic cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := Synthetic(tmp, files, seed); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(want), 0o644); err != nil {
		return "", fmt.Errorf("synthetic cache: %w", err)
	}

	// A directory already there is stale (no marker or an older generator):
	// move it aside before renaming the new one in.
	if _, err := os.Stat(dir); err == nil {
		if complete(dir, want) {
			return dir, nil // another process finished first
		}
		trash, err := os.MkdirTemp(cacheDir, ".stale-synthetic-")
		if err != nil {
			return "", fmt.Errorf("synthetic cache: %w", err)
		}
		defer os.RemoveAll(trash)
		if err := os.Rename(dir, filepath.Join(trash, "repo")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("synthetic cache: replace stale %q: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if complete(dir, want) {
			return dir, nil // lost the race to an identical build
		}
		return "", fmt.Errorf("synthetic cache: %w", err)
	}
	return dir, nil
}

// complete reports whether dir holds a finished build with marker want.
func complete(dir, want string) bool {
	got, err := os.ReadFile(filepath.Join(dir, markerFile))
	return err == nil && strings.TrimSpace(string(got)) == strings.TrimSpace(want)
}
