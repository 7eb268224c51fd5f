package testrepo

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GitEnv runs git like GitInput, with extra environment variables (for
// example GIT_INDEX_FILE for a temporary index).
func GitEnv(tb testing.TB, dir string, env []string, stdin []byte, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(Env(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("git %s (in %q): %v\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out))
}

// CloneLocal makes a writable bare copy of src whose objects are hard
// links (git clone --local): no alternates, so every reader sees a plain
// repository, and src is never written.
func CloneLocal(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "clone.git")
	Git(tb, "", "clone", "-q", "--bare", "--local", "--", src, dst)
	return dst
}

// CommitWithIndex commits new contents of paths over commit parent the way
// a script does without a work tree: files through hash-object, a
// temporary index read from parent, update-index, write-tree and
// commit-tree. It returns the commit id. scratch is a directory it may
// use; the performance benchmarks measure this route against sessiond.
func CommitWithIndex(tb testing.TB, dir, scratch, parent string, paths []string, content func(p string) []byte) string {
	tb.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(scratch, "index")}
	var list bytes.Buffer
	for i, p := range paths {
		f := filepath.Join(scratch, strconv.Itoa(i))
		if err := os.WriteFile(f, content(p), 0o644); err != nil {
			tb.Fatal(err)
		}
		list.WriteString(f + "\n")
	}
	ids := strings.Split(GitEnv(tb, dir, nil, list.Bytes(), "hash-object", "-w", "--stdin-paths"), "\n")
	var info bytes.Buffer
	for i, p := range paths {
		fmt.Fprintf(&info, "100644 %s\t%s\n", ids[i], p)
	}
	GitEnv(tb, dir, env, nil, "read-tree", parent+"^{tree}")
	GitEnv(tb, dir, env, info.Bytes(), "update-index", "--index-info")
	tree := GitEnv(tb, dir, env, nil, "write-tree")
	return GitEnv(tb, dir, nil, []byte("commit\n"), "commit-tree", tree, "-p", parent)
}

// CatFile drives one `git cat-file --batch` process, the git CLI's fastest
// way to read many objects; the read benchmarks measure against it.
type CatFile struct {
	in  io.WriteCloser
	out *bufio.Reader
}

// StartCatFile starts git cat-file --batch in dir; it ends with tb.
func StartCatFile(tb testing.TB, dir string) *CatFile {
	tb.Helper()
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir = dir
	cmd.Env = Env()
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close(); cmd.Wait() })
	return &CatFile{in: in, out: bufio.NewReaderSize(out, 1<<16)}
}

// Read returns the content of the object rev names (an id, or
// "<commit>:<path>").
func (c *CatFile) Read(tb testing.TB, rev string) []byte {
	fmt.Fprintln(c.in, rev)
	hdr, err := c.out.ReadString('\n')
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(hdr)
	if len(f) != 3 {
		tb.Fatalf("cat-file %s: %q", rev, hdr)
	}
	n, _ := strconv.Atoi(f[2])
	data := make([]byte, n+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		tb.Fatal(err)
	}
	return data[:n]
}
