package mcpserver

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

const (
	defaultDepth      = 2
	maxDepth          = 20
	maxListEntries    = 2000
	defaultGrepResult = 100
	maxGrepResults    = 1000
	maxGrepContext    = 10
)

// ListDirIn is list_dir's input.
type ListDirIn struct {
	SessionArg
	Path  string `json:"path,omitempty" sessiond:"path" jsonschema:"The directory to list, relative to the repository root; empty for the root."`
	Depth int    `json:"depth,omitempty" jsonschema:"How many levels to show (default 2: the directory's entries and theirs; 1 for its entries only)."`
}

// Entry is one path of a listing.
type Entry struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Size   int64  `json:"size,omitempty"`
	Status string `json:"status,omitempty"`
	Depth  int    `json:"depth,omitempty"`
}

// Listing is what list_dir and glob found.
type Listing struct {
	Path      string  `json:"path,omitempty"`
	Pattern   string  `json:"pattern,omitempty"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
	Total     int     `json:"total,omitempty"`
}

// GlobIn is glob's input.
type GlobIn struct {
	SessionArg
	Pattern string `json:"pattern" sessiond:"path" jsonschema:"A glob over paths relative to the repository root: * matches within one name, ** any number of directories, ? one character, [abc] a class; e.g. **/*.go or src/**/test_*.py."`
}

// GrepIn is grep's input.
type GrepIn struct {
	SessionArg
	Pattern         string `json:"pattern" jsonschema:"A regular expression (RE2 syntax, as Go's regexp) matched against each line."`
	Glob            string `json:"glob,omitempty" sessiond:"path" jsonschema:"Only search files whose path matches this glob, e.g. **/*.go."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"Match regardless of case."`
	Context         int    `json:"context,omitempty" jsonschema:"Lines of context to show before and after each match (default 0, at most 10)."`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"At most this many matching lines (default 100, at most 1000)."`
}

// GrepMatch is one matching line with its context.
type GrepMatch struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Column int      `json:"column"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// GrepResult is what grep found.
type GrepResult struct {
	Matches   []GrepMatch `json:"matches"`
	Truncated bool        `json:"truncated"`
	Files     int         `json:"files"`
}

func (s *server) treeTools(ms *mcp.Server) {
	addTool[Listing](s, ms, toolSpec{name: toolListDir, title: "List a directory", kind: readOnly, description: "List a directory of the session as a tree, depth-limited (default 2 levels), with each entry's status in this session (added, modified, deleted; unmarked entries are as in the base) and file sizes. " +
		"Deleted entries are shown so you see your own changes at a glance."}, (*server).listDir)
	addTool[Listing](s, ms, toolSpec{name: toolGlob, title: "Find files by name", kind: readOnly, description: "List the files whose paths match a glob (e.g. **/*.go), in path order, with their status in this session."}, (*server).glob)
	addTool[GrepResult](s, ms, toolSpec{name: toolGrep, title: "Search file contents", kind: readOnly, description: "Search the session's files for a regular expression (RE2). Returns path:line: text for each matching line, optionally with context lines (path-line- text), capped at max_results and saying when it was cut. Binary files are skipped."}, (*server).grep)
}

func (s *server) listDir(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ListDirIn) (result, error) {
	dir := strings.Trim(in.Path, "/")
	if dir == "." {
		dir = ""
	}
	depth := in.Depth
	if depth <= 0 {
		depth = defaultDepth
	}
	depth = min(depth, maxDepth)
	// The view, level by level, and the session's deletions (which the
	// view no longer has) merged in at their places.
	type node struct {
		Entry
		children []*node
	}
	root := &node{}
	deleted, err := s.b.Tree(ctx, sid, client.TreeOptions{Prefix: dir, Recursive: true, OnlyModified: true})
	if err != nil {
		return result{}, err
	}
	count, truncated := 0, false
	level := []*node{root}
	for d := 1; d <= depth && len(level) > 0 && !truncated; d++ {
		var next []*node
		for _, parent := range level {
			prefix := dir
			if parent != root {
				prefix = parent.Path
			}
			entries, err := s.b.Tree(ctx, sid, client.TreeOptions{Prefix: prefix})
			if err != nil {
				return result{}, err
			}
			for _, e := range entries {
				if count >= maxListEntries {
					truncated = true
					break
				}
				count++
				n := &node{Entry: Entry{Path: e.Path, Type: e.Type, Size: e.Size, Status: e.Status, Depth: d}}
				parent.children = append(parent.children, n)
				if e.Type == "dir" {
					next = append(next, n)
				}
			}
			if truncated {
				break
			}
		}
		level = next
	}
	// Deleted paths under the levels shown.
	byPath := map[string]*node{"": root}
	var walk func(n *node)
	walk = func(n *node) {
		for _, c := range n.children {
			byPath[c.Path] = c
			walk(c)
		}
	}
	walk(root)
	base := dir
	for _, e := range deleted {
		if e.Status != "deleted" {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(e.Path, base), "/")
		d := strings.Count(rel, "/") + 1
		parentPath := path.Dir(e.Path)
		if parentPath == "." || parentPath == base {
			parentPath = ""
		}
		if d > depth {
			continue
		}
		p := byPath[parentPath]
		if p == nil {
			continue // under a directory that is itself gone or not shown
		}
		n := &node{Entry: Entry{Path: e.Path, Type: e.Type, Status: "deleted", Depth: d}}
		p.children = append(p.children, n)
		byPath[e.Path] = n
	}
	out := Listing{Path: dir, Truncated: truncated, Entries: []Entry{}}
	var b strings.Builder
	name := dir
	if name == "" {
		name = "the repository root"
	}
	fmt.Fprintf(&b, "%s (depth %d; status shown where it differs from the base):\n", name, depth)
	bud := s.budget()
	var show func(n *node, indent string)
	show = func(n *node, indent string) {
		sort.Slice(n.children, func(i, j int) bool { return n.children[i].Path < n.children[j].Path })
		for _, c := range n.children {
			line := indent + path.Base(c.Path)
			if c.Type == "dir" {
				line += "/"
			} else if c.Status != "deleted" {
				line += " (" + size(c.Size) + ")"
			}
			if c.Status != "" && c.Status != "unchanged" {
				line += " [" + c.Status + "]"
			}
			line += "\n"
			if !bud.take(len(line)) {
				out.Truncated = true
				return
			}
			b.WriteString(line)
			out.Entries = append(out.Entries, c.Entry)
			show(c, indent+"  ")
		}
	}
	show(root, "  ")
	if len(out.Entries) == 0 {
		b.WriteString("  (empty)\n")
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[cut at %d entries; list a subdirectory or use a smaller depth to see the rest]\n", len(out.Entries))
	}
	return result{text: b.String(), data: out}, nil
}

func size(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

func (s *server) glob(ctx context.Context, _ *mcp.CallToolRequest, sid string, in GlobIn) (result, error) {
	if in.Pattern == "" {
		return result{}, badRequest("pattern is required")
	}
	entries, err := s.b.Tree(ctx, sid, client.TreeOptions{Glob: in.Pattern, Recursive: true})
	if err != nil {
		return result{}, err
	}
	out := Listing{Pattern: in.Pattern, Entries: []Entry{}, Total: len(entries)}
	var b strings.Builder
	fmt.Fprintf(&b, "%d path(s) match %s:\n", len(entries), in.Pattern)
	bud := s.budget()
	for _, e := range entries {
		if e.Type == "dir" {
			continue
		}
		line := e.Path
		if e.Status != "" && e.Status != "unchanged" {
			line += " [" + e.Status + "]"
		}
		line += "\n"
		if len(out.Entries) >= maxListEntries || !bud.take(len(line)) {
			out.Truncated = true
			break
		}
		b.WriteString(line)
		out.Entries = append(out.Entries, Entry{Path: e.Path, Type: e.Type, Size: e.Size, Status: e.Status})
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[cut: showing %d of %d; use a narrower pattern for the rest]\n", len(out.Entries), len(entries))
	}
	return result{text: b.String(), data: out}, nil
}

func (s *server) grep(ctx context.Context, _ *mcp.CallToolRequest, sid string, in GrepIn) (result, error) {
	if in.Pattern == "" {
		return result{}, badRequest("pattern is required")
	}
	limit := in.MaxResults
	if limit <= 0 {
		limit = defaultGrepResult
	}
	limit = min(limit, maxGrepResults)
	ctxLines := min(max(in.Context, 0), maxGrepContext)
	res, err := s.b.Search(ctx, sid, apitypes.SearchRequest{Pattern: in.Pattern, Glob: in.Glob, CaseInsensitive: in.CaseInsensitive, MaxResults: limit, Context: ctxLines})
	if err != nil {
		return result{}, err
	}
	// The engine returns each match with its context lines (none shown
	// twice); this only prints them, as grep -C does.
	out := GrepResult{Matches: []GrepMatch{}, Truncated: res.Truncated}
	var b strings.Builder
	bud := s.budget()
	lastPath, lastLine := "", 0
	for _, m := range res.Matches {
		gm := GrepMatch{Path: m.Path, Line: m.Line, Column: m.Column, Text: m.Text, Before: m.Before, After: m.After}
		var chunk strings.Builder
		first := m.Line - len(m.Before)
		if ctxLines > 0 && lastPath != "" && (m.Path != lastPath || first > lastLine+1) {
			chunk.WriteString("--\n")
		}
		for i, l := range m.Before {
			fmt.Fprintf(&chunk, "%s-%d- %s\n", m.Path, first+i, cutLine(l, maxLineChars))
		}
		fmt.Fprintf(&chunk, "%s:%d: %s\n", m.Path, m.Line, cutLine(m.Text, maxLineChars))
		for i, l := range m.After {
			fmt.Fprintf(&chunk, "%s-%d- %s\n", m.Path, m.Line+1+i, cutLine(l, maxLineChars))
		}
		if !bud.take(chunk.Len()) {
			out.Truncated = true
			break
		}
		b.WriteString(chunk.String())
		out.Matches = append(out.Matches, gm)
		if m.Path != lastPath {
			out.Files++
		}
		lastPath, lastLine = m.Path, m.Line+len(m.After)
	}
	head := fmt.Sprintf("%d matching line(s) in %d file(s)", len(out.Matches), out.Files)
	if len(out.Matches) == 0 {
		head = "No matches"
	}
	text := head + " for /" + in.Pattern + "/"
	if in.Glob != "" {
		text += " in " + in.Glob
	}
	text += ":\n" + b.String()
	if out.Truncated {
		text += fmt.Sprintf("[cut: there are more matches than the %d shown; narrow the pattern or glob, or raise max_results (at most %d)]\n", len(out.Matches), maxGrepResults)
	}
	return result{text: text, data: out}, nil
}
