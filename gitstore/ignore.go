package gitstore

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore matches paths against the patterns of .gitignore files, as git
// does for untracked files: a pattern from a deeper .gitignore wins over a
// shallower one, a later line over an earlier one, and "!" re-includes.
// Patterns are go-git's (plumbing/format/gitignore). The caller walks
// directories top-down and skips an ignored directory whole, which gives
// git's rule that nothing below an excluded directory can be re-included.
//
// An Ignore is not safe for concurrent use.
type Ignore struct {
	patterns []gitignore.Pattern
}

// AddFile adds the patterns of the .gitignore file in directory dir
// ("" for the root). Files must be added parents first.
func (ig *Ignore) AddFile(dir string, content []byte) {
	var domain []string
	if dir != "" {
		domain = strings.Split(dir, "/")
	}
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ig.patterns = append(ig.patterns, gitignore.ParsePattern(line, domain))
	}
}

// Match reports whether path (slash-separated, relative to the root) is
// ignored; isDir says whether it is a directory.
func (ig *Ignore) Match(path string, isDir bool) bool {
	if len(ig.patterns) == 0 {
		return false
	}
	parts := strings.Split(path, "/")
	for i := len(ig.patterns) - 1; i >= 0; i-- {
		switch ig.patterns[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}
