package testrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
)

const (
	// DefaultSyntheticFiles is the size of the repository the performance
	// targets are measured on.
	DefaultSyntheticFiles = 100_000
	// SyntheticSeed is the seed CachedSynthetic uses.
	SyntheticSeed = 1
	// FilesPerDir sets the number of directories: files/FilesPerDir.
	FilesPerDir = 50
	// SyntheticDepth is how many directories deep the deepest files sit.
	SyntheticDepth = 4

	// syntheticVersion names the generator's output; bump it whenever
	// Synthetic would write a different repository for the same arguments,
	// so caches built by an older generator are rebuilt.
	syntheticVersion = 1
)

// Synthetic writes a large, deterministic repository into dir (created if
// missing, and it must be empty): a bare repository whose branch main holds
// one commit. The same files and seed give the same commit id on every
// machine. files <= 0 means DefaultSyntheticFiles.
//
// Layout, for D = max(1, round(files/FilesPerDir)) directories:
//
//   - Directories form a tree four levels deep. With f = floor(D^(1/4)),
//     level 1 has f directories, level 2 f², level 3 f³ and level 4 the
//     remaining D-f-f²-f³ (fewer levels when D < 4). Directory j of a level
//     hangs under directory j mod n of the level above (n directories), so
//     children spread evenly. For 100,000 files there are 2,000 directories
//     (6, 36, 216 and 1,742 per level), about 8 under each level-3 one.
//   - Directory names are a word and a number unique within their level,
//     such as "store17"; file names are a word, "_", the file's index and an
//     extension, such as "cache_4711.go". Only [a-z0-9_.] is used.
//   - File i goes into directory i mod (D+1), where 0 is the root, so every
//     directory, the root included, holds about FilesPerDir entries.
//   - Contents are lines of code-like words, 200 B to 2 KB for nine files in
//     ten and 2 KB to 6 KB for the rest (about 1.5 KB on average). The first
//     line names the file's path, so no two files share a blob.
//   - Every file whose index is 7 mod 500 is an executable shell script
//     (mode 100755); every file whose index is 13 mod 1000 is a symlink
//     (mode 120000, named link_<i>) to the previously generated regular file
//     of its directory, or to "missing" when there is none yet.
//
// "files" counts every non-directory entry, symlinks included, so
// `git ls-tree -r main` prints exactly files lines.
//
// The repository is written by one `git fast-import` run, into one pack
// without deltas (about 65 MB for 100,000 files), in about ten seconds on
// two cores for 100,000 files.
func Synthetic(dir string, files, seed int) error {
	return synthetic(context.Background(), dir, files, seed)
}

func synthetic(ctx context.Context, dir string, files, seed int) error {
	if files <= 0 {
		files = DefaultSyntheticFiles
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synthetic repository: %w", err)
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("synthetic repository: %w", err)
	} else if len(ents) > 0 {
		return fmt.Errorf("synthetic repository: %q is not empty", dir)
	}
	if _, err := run(ctx, dir, nil, "init", "-q", "--bare", "-b", "main"); err != nil {
		return fmt.Errorf("synthetic repository: %w", err)
	}

	var stderr bytes.Buffer
	// --depth=0: blobs that differ in every line gain nothing from fast-import's
	// delta against the previous blob, and trying costs a third of the run.
	cmd := exec.CommandContext(ctx, "git", "fast-import", "--quiet", "--done", "--depth=0")
	cmd.Dir = dir
	cmd.Env = Env()
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("synthetic repository: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("synthetic repository: git fast-import: %w", err)
	}
	genErr := writeSyntheticStream(stdin, files, seed)
	closeErr := stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("synthetic repository: git fast-import: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	if err := errors.Join(genErr, closeErr); err != nil {
		return fmt.Errorf("synthetic repository: %w", err)
	}
	return nil
}

// syntheticDirs returns the directories of the layout described at
// Synthetic, root first as "", each after its parent.
func syntheticDirs(rng *rand.Rand, files int) []string {
	total := max(1, int(math.Round(float64(files)/FilesPerDir)))
	f := max(1, int(math.Floor(math.Pow(float64(total), 1.0/SyntheticDepth))))
	dirs := []string{""}
	parents := []string{""}
	left := total
	for level := 1; level <= SyntheticDepth && left > 0; level++ {
		n := left
		if level < SyntheticDepth {
			n = min(left, int(math.Pow(float64(f), float64(level))))
		}
		this := make([]string, n)
		for j := range n {
			this[j] = path.Join(parents[j%len(parents)], dirWords[rng.IntN(len(dirWords))]+strconv.Itoa(j))
		}
		dirs = append(dirs, this...)
		parents = this
		left -= n
	}
	return dirs
}

func writeSyntheticStream(w io.Writer, files, seed int) error {
	rng := rand.New(rand.NewPCG(uint64(seed), syntheticVersion))
	bw := bufio.NewWriterSize(w, 1<<20)
	dirs := syntheticDirs(rng, files)

	msg := fmt.Sprintf("synthetic repository: %d files, seed %d\n", files, seed)
	fmt.Fprintf(bw, "feature done\ncommit refs/heads/main\n")
	fmt.Fprintf(bw, "author %s <%s> %s\n", AuthorName, AuthorEmail, Date)
	fmt.Fprintf(bw, "committer %s <%s> %s\n", CommitterName, CommitterEmail, Date)
	fmt.Fprintf(bw, "data %d\n%s", len(msg), msg)

	lastFile := make([]string, len(dirs))
	var body bytes.Buffer
	for i := range files {
		d := i % len(dirs)
		body.Reset()
		var mode, name string
		switch {
		case i%1000 == 13:
			mode, name = "120000", "link_"+strconv.Itoa(i)
			target := lastFile[d]
			if target == "" {
				target = "missing"
			}
			body.WriteString(target)
		case i%500 == 7:
			mode, name = "100755", fileWords[rng.IntN(len(fileWords))]+"_"+strconv.Itoa(i)+".sh"
			writeContent(&body, rng, "#!/bin/sh\n# "+path.Join(dirs[d], name)+"\n", "echo ")
		default:
			ext := extensions[rng.IntN(len(extensions))]
			mode, name = "100644", fileWords[rng.IntN(len(fileWords))]+"_"+strconv.Itoa(i)+ext
			writeContent(&body, rng, commentPrefix(ext)+path.Join(dirs[d], name)+"\n", "")
		}
		if mode != "120000" {
			lastFile[d] = name
		}
		fmt.Fprintf(bw, "M %s inline %s\ndata %d\n", mode, path.Join(dirs[d], name), body.Len())
		bw.Write(body.Bytes())
		bw.WriteByte('\n')
	}
	bw.WriteString("\ndone\n")
	return bw.Flush()
}

// writeContent writes header and then code-like lines until the size drawn
// for the file is reached.
func writeContent(b *bytes.Buffer, rng *rand.Rand, header, linePrefix string) {
	size := 200 + rng.IntN(1800)
	if rng.IntN(10) == 0 {
		size = 2000 + rng.IntN(4000)
	}
	b.WriteString(header)
	for b.Len() < size {
		b.WriteString(strings.Repeat("\t", rng.IntN(3)))
		b.WriteString(linePrefix)
		for w := range 3 + rng.IntN(8) {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(codeWords[rng.IntN(len(codeWords))])
		}
		b.WriteByte('\n')
	}
}

func commentPrefix(ext string) string {
	switch ext {
	case ".py", ".yaml", ".md", ".txt":
		return "# "
	default:
		return "// "
	}
}

var (
	dirWords = []string{
		"api", "auth", "cache", "cmd", "config", "core", "db", "docs", "event",
		"http", "index", "internal", "io", "log", "net", "pkg", "proto", "query",
		"server", "store", "sync", "test", "tools", "ui", "util", "web",
	}
	fileWords = []string{
		"alloc", "buffer", "client", "codec", "conn", "convert", "decode",
		"encode", "engine", "errors", "handler", "hash", "iter", "list", "lock",
		"main", "map", "merge", "model", "parse", "pool", "queue", "reader",
		"router", "scan", "schema", "session", "stream", "table", "token",
		"tree", "types", "writer",
	}
	extensions = []string{
		".go", ".go", ".go", ".go", ".c", ".h", ".py", ".ts", ".json", ".yaml",
		".md", ".txt",
	}
	codeWords = []string{
		"func", "return", "if", "err", "!=", "nil", "{", "}", "(", ")", ":=",
		"for", "range", "var", "const", "type", "struct", "int", "string",
		"byte", "ctx", "len", "append", "make", "map", "id", "path", "value",
		"key", "result", "buf", "n", "i", "=", "==", "+", "else", "switch",
		"case", "default", "go", "defer", "select", "chan", "true", "false",
		"new", "copy", "entry", "tree", "blob", "commit", "ref", "index",
	}
)
