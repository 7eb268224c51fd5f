package merge

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"github.com/sessiond/sessiond/highlight"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Hunk is one hunk of a file's line diff. Lines start with ' ', '-' or
// '+'; a line that has no newline at the end of its file is kept without
// one (NoNewline... flags tell which side).
type Hunk struct {
	OldStart int      `json:"old_start"`
	OldLines int      `json:"old_lines"`
	NewStart int      `json:"new_start"`
	NewLines int      `json:"new_lines"`
	Lines    []string `json:"lines"`
	// Function is the hunk's function context, the text git prints
	// after "@@ … @@" (funcname.go): empty when no line above the hunk is
	// a function line.
	Function string `json:"function,omitempty"`
	// Spans are the syntax tokens of each line (Patch.Highlight), one
	// entry per line of Lines; nil when the patch was not highlighted or
	// the file is left plain.
	Spans [][]highlight.Span `json:"spans,omitempty"`
}

// FileDiff is one file of a Patch: the change plus its hunks.
type FileDiff struct {
	FileChange
	Binary     bool
	Hunks      []Hunk
	Insertions int
	Deletions  int
	old, new   []byte // contents, for binary patches
}

// Stats sums a patch up, as git diff --shortstat does.
type Stats struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// Patch is a diff with contents: what the unified and JSON forms show.
type Patch struct {
	Files []FileDiff
	Stats Stats
}

// PatchOptions tune BuildPatch.
type PatchOptions struct {
	// Context is the number of context lines; 0 means git's 3, a negative
	// value none.
	Context int
	// AttrTree is the tree (or commit) whose .gitattributes files choose
	// each file's diff driver, and so the function context of its hunk
	// headers, as a checkout's work tree does for git diff. Diff takes
	// its new tree when this is zero; BuildPatch then reads only the
	// repository's info/attributes.
	AttrTree gitstore.OID
	// Read reads a blob of the changes; nil reads the repository's. A
	// change not written yet (an edit's dry run) hands its own.
	Read func(context.Context, gitstore.OID) ([]byte, error)
}

// Diff is DiffTrees followed by BuildPatch.
func Diff(ctx context.Context, repo *gitstore.Repo, oldTree, newTree gitstore.OID, dopts DiffOptions, popts PatchOptions) (*Patch, error) {
	changes, err := DiffTrees(ctx, repo, oldTree, newTree, dopts)
	if err != nil {
		return nil, err
	}
	if popts.AttrTree.IsZero() {
		popts.AttrTree = newTree
	}
	return BuildPatch(ctx, repo, changes, popts)
}

// BuildPatch reads the contents of changes and computes their hunks with
// git's diff (Myers with the indent heuristic, as git diff by default),
// each hunk with its function context.
func BuildPatch(ctx context.Context, repo *gitstore.Repo, changes []FileChange, opts PatchOptions) (*Patch, error) {
	ctxLines := opts.Context
	if ctxLines == 0 {
		ctxLines = 3
	}
	ctxLines = max(ctxLines, 0)
	attrs, err := gitstore.NewAttributes(ctx, repo, opts.AttrTree)
	if err != nil {
		return nil, fmt.Errorf("patch: attributes: %w", err)
	}
	drv := &drivers{repo: repo, attrs: attrs}
	p := &Patch{Files: make([]FileDiff, 0, len(changes))}
	stop := func() bool { return ctx.Err() != nil }
	read := func(id gitstore.OID, m gitstore.Mode) ([]byte, error) {
		if id.IsZero() || m == gitstore.ModeGitlink {
			return nil, nil
		}
		if opts.Read != nil {
			return opts.Read(ctx, id)
		}
		return repo.ReadBlob(ctx, id)
	}
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fd := FileDiff{FileChange: c}
		var err error
		if fd.old, err = read(c.OldOID, c.OldMode); err != nil {
			return nil, fmt.Errorf("patch %q: %w", c.Path(), err)
		}
		if fd.new, err = read(c.NewOID, c.NewMode); err != nil {
			return nil, fmt.Errorf("patch %q: %w", c.Path(), err)
		}
		if c.OldMode == gitstore.ModeGitlink || c.NewMode == gitstore.ModeGitlink {
			// git shows a gitlink as a one-line "Subproject commit" file.
			fd.old, fd.new = subproject(c.OldOID, c.OldMode), subproject(c.NewOID, c.NewMode)
		}
		fd.Binary = IsBinary(fd.old) || IsBinary(fd.new)
		if !fd.Binary && c.OldOID != c.NewOID {
			// git takes the old path's driver, else the new path's.
			var ff *funcFinder
			for _, path := range []string{c.OldPath, c.NewPath} {
				if ff != nil {
					break
				}
				if ff, err = drv.finder(ctx, path); err != nil {
					return nil, fmt.Errorf("patch %q: attributes: %w", c.Path(), err)
				}
			}
			fd.Hunks = hunksUntil(stop, splitLines(fd.old), splitLines(fd.new), ctxLines, ff)
			if err := ctx.Err(); err != nil {
				return nil, err // the line diff gave up halfway
			}
			for _, h := range fd.Hunks {
				for _, l := range h.Lines {
					switch l[0] {
					case '+':
						fd.Insertions++
					case '-':
						fd.Deletions++
					}
				}
			}
		}
		p.Stats.Files++
		p.Stats.Insertions += fd.Insertions
		p.Stats.Deletions += fd.Deletions
		p.Files = append(p.Files, fd)
	}
	return p, nil
}

func subproject(id gitstore.OID, m gitstore.Mode) []byte {
	if m != gitstore.ModeGitlink {
		return nil
	}
	return []byte("Subproject commit " + id.String() + "\n")
}

// hunks groups an edit script into hunks with ctx lines of context,
// joining changes closer than 2×ctx lines, as xdiff's emitter does, with
// the function context of git's default rule.
func hunks(a, b [][]byte, ctx int) []Hunk { return hunksUntil(nil, a, b, ctx, nil) }

// hunksUntil is hunks whose line diff gives up once stop says true (a
// request that ended; the caller then throws the hunks away), with the
// function context of ff (nil: git's default rule).
func hunksUntil(stop func() bool, a, b [][]byte, ctx int, ff *funcFinder) []Hunk {
	script := diffLines(a, b, diffOptions{indentHeuristic: true, stop: stop})
	fc := funcContext{f: ff, a: a, limit: -1}
	var out []Hunk
	for i := 0; i < len(script); {
		j := i
		for j+1 < len(script) && script[j+1].i1-(script[j].i1+script[j].chg1) <= 2*ctx {
			j++
		}
		first, last := script[i], script[j]
		s1 := max(first.i1-ctx, 0)
		s2 := max(first.i2-ctx, 0)
		e1 := min(last.i1+last.chg1+ctx, len(a))
		e2 := min(last.i2+last.chg2+ctx, len(b))
		h := Hunk{OldStart: s1 + 1, OldLines: e1 - s1, NewStart: s2 + 1, NewLines: e2 - s2, Function: fc.at(s1)}
		if h.OldLines == 0 {
			h.OldStart = s1
		}
		if h.NewLines == 0 {
			h.NewStart = s2
		}
		p1 := s1
		for k := i; k <= j; k++ {
			e := script[k]
			for ; p1 < e.i1; p1++ {
				h.Lines = append(h.Lines, " "+string(a[p1]))
			}
			for x := e.i1; x < e.i1+e.chg1; x++ {
				h.Lines = append(h.Lines, "-"+string(a[x]))
			}
			for x := e.i2; x < e.i2+e.chg2; x++ {
				h.Lines = append(h.Lines, "+"+string(b[x]))
			}
			p1 = e.i1 + e.chg1
		}
		for ; p1 < e1; p1++ {
			h.Lines = append(h.Lines, " "+string(a[p1]))
		}
		out = append(out, h)
		i = j + 1
	}
	return out
}

// Unified returns the patch as git diff --binary prints it: text that
// git apply accepts and that turns the old tree into the new one.
func (p *Patch) Unified() []byte {
	var b bytes.Buffer
	for i := range p.Files {
		f := &p.Files[i]
		if f.Status == StatusTypeChanged {
			// git shows a type change as a deletion and an addition.
			del, add := *f, *f
			del.Status, del.NewPath, del.NewMode, del.NewOID, del.new = StatusDeleted, "", 0, gitstore.OID{}, nil
			add.Status, add.OldPath, add.OldMode, add.OldOID, add.old = StatusAdded, "", 0, gitstore.OID{}, nil
			for _, x := range []*FileDiff{&del, &add} {
				if !x.Binary {
					x.Hunks = hunks(splitLines(x.old), splitLines(x.new), 3)
				}
				writeFile(&b, x)
			}
			continue
		}
		writeFile(&b, f)
	}
	return b.Bytes()
}

func writeFile(b *bytes.Buffer, f *FileDiff) {
	oldPath, newPath := f.OldPath, f.NewPath
	if oldPath == "" {
		oldPath = newPath
	}
	if newPath == "" {
		newPath = oldPath
	}
	fmt.Fprintf(b, "diff --git %s %s\n", QuotePath("a/"+oldPath), QuotePath("b/"+newPath))
	abbrev := func(id gitstore.OID) string {
		if f.Binary {
			return id.String()
		}
		return id.String()[:7]
	}
	switch f.Status {
	case StatusAdded:
		fmt.Fprintf(b, "new file mode %s\n", f.NewMode)
		fmt.Fprintf(b, "index %s..%s\n", abbrev(gitstore.ZeroOID), abbrev(f.NewOID))
	case StatusDeleted:
		fmt.Fprintf(b, "deleted file mode %s\n", f.OldMode)
		fmt.Fprintf(b, "index %s..%s\n", abbrev(f.OldOID), abbrev(gitstore.ZeroOID))
	default:
		if f.OldMode != f.NewMode {
			fmt.Fprintf(b, "old mode %s\nnew mode %s\n", f.OldMode, f.NewMode)
		}
		if f.Status == StatusRenamed || f.Status == StatusCopied {
			verb := "rename"
			if f.Status == StatusCopied {
				verb = "copy"
			}
			fmt.Fprintf(b, "similarity index %d%%\n%s from %s\n%s to %s\n", f.Similarity, verb, QuotePath(f.OldPath), verb, QuotePath(f.NewPath))
		}
		if f.OldOID != f.NewOID {
			fmt.Fprintf(b, "index %s..%s", abbrev(f.OldOID), abbrev(f.NewOID))
			if f.OldMode == f.NewMode {
				fmt.Fprintf(b, " %s", f.NewMode)
			}
			b.WriteByte('\n')
		}
	}
	if f.OldOID == f.NewOID && f.Status != StatusAdded && f.Status != StatusDeleted {
		return
	}
	if f.Binary {
		b.WriteString("GIT binary patch\n")
		writeBinary(b, f.new)
		writeBinary(b, f.old)
		return
	}
	if len(f.Hunks) == 0 {
		return
	}
	from, to := QuotePath("a/"+oldPath), QuotePath("b/"+newPath)
	if f.Status == StatusAdded {
		from = "/dev/null"
	}
	if f.Status == StatusDeleted {
		to = "/dev/null"
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", from, to)
	for _, h := range f.Hunks {
		fmt.Fprintf(b, "@@ -%s +%s @@", rangeText(h.OldStart, h.OldLines), rangeText(h.NewStart, h.NewLines))
		if h.Function != "" {
			b.WriteByte(' ')
			b.WriteString(h.Function)
		}
		b.WriteByte('\n')
		for _, l := range h.Lines {
			b.WriteString(l)
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
}

func rangeText(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// QuotePath quotes a path the way git does when it holds control
// characters, quotes, backslashes or non-ASCII bytes (core.quotePath).
func QuotePath(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// writeBinary writes one "literal" hunk of a git binary patch: the
// deflated content in base85 lines of up to 52 bytes.
func writeBinary(b *bytes.Buffer, data []byte) {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write(data)
	w.Close()
	fmt.Fprintf(b, "literal %d\n", len(data))
	buf := z.Bytes()
	for len(buf) > 0 {
		n := min(len(buf), 52)
		if n <= 26 {
			b.WriteByte(byte('A' + n - 1))
		} else {
			b.WriteByte(byte('a' + n - 27))
		}
		chunk := buf[:n]
		for len(chunk) > 0 {
			var acc uint32
			for k := 0; k < 4; k++ {
				acc <<= 8
				if k < len(chunk) {
					acc |= uint32(chunk[k])
				}
			}
			var out [5]byte
			for k := 4; k >= 0; k-- {
				out[k] = base85[acc%85]
				acc /= 85
			}
			b.Write(out[:])
			chunk = chunk[min(4, len(chunk)):]
		}
		b.WriteByte('\n')
		buf = buf[n:]
	}
	b.WriteByte('\n')
}
