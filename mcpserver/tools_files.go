package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

const (
	defaultReadLines = 2000
	maxLineChars     = 2000
)

// ReadFileIn is read_file's input.
type ReadFileIn struct {
	SessionArg
	Path   string `json:"path" sessiond:"path" jsonschema:"The file's path relative to the repository root, e.g. src/main.go (no leading slash)."`
	Offset int    `json:"offset,omitempty" jsonschema:"The first line to show, counting from 1 (default 1). Use it with limit to page through a long file."`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many lines to show (default 2000)."`
}

// FileContent is what read_file found.
type FileContent struct {
	Path        string `json:"path"`
	ETag        string `json:"etag"`
	Source      string `json:"source,omitempty"`
	Status      string `json:"status,omitempty"`
	Mode        string `json:"mode,omitempty"`
	Size        int64  `json:"size"`
	Binary      bool   `json:"binary,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Symlink     string `json:"symlink_target,omitempty"`
	TotalLines  int    `json:"total_lines"`
	Offset      int    `json:"offset"`
	Lines       int    `json:"lines"`
	NextOffset  int    `json:"next_offset,omitempty"`
	CutLines    []int  `json:"cut_lines,omitempty"`
	LineEndings string `json:"line_endings,omitempty"`
	NoFinalEOL  bool   `json:"no_final_newline,omitempty"`
	Content     string `json:"content"`
	Error       *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// ReadFilesIn is read_files's input.
type ReadFilesIn struct {
	SessionArg
	Paths []string `json:"paths" sessiond:"path" jsonschema:"The files to read, each relative to the repository root; each is shown as read_file shows it (its first 2000 lines)."`
}

// WriteFileIn is write_file's input.
type WriteFileIn struct {
	SessionArg
	Path    string `json:"path" sessiond:"path" jsonschema:"The file to create or overwrite, relative to the repository root. Missing directories are created."`
	Content string `json:"content" jsonschema:"The file's whole new content."`
	IfMatch string `json:"if_match,omitempty" jsonschema:"The ETag read_file returned: write only if the file is still at that version (recommended when overwriting; omit to create a file)."`
}

// EditFileIn is edit_file's input.
type EditFileIn struct {
	SessionArg
	Path    string   `json:"path" sessiond:"path" jsonschema:"The file to edit, relative to the repository root."`
	Edits   []EditOp `json:"edits" jsonschema:"The replacements, applied in order, each to the result of the ones before; all of them apply or none does."`
	IfMatch string   `json:"if_match,omitempty" jsonschema:"The ETag read_file returned: edit only if the file is still at that version."`
	DryRun  bool     `json:"dry_run,omitempty" jsonschema:"Show the unified diff the edits would make without writing anything."`
}

// DeletePathIn is delete_path's input.
type DeletePathIn struct {
	SessionArg
	Path      string `json:"path" sessiond:"path" jsonschema:"The file or directory to delete, relative to the repository root."`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"Required to delete a directory and everything under it."`
}

// MovePathIn is move_path's input.
type MovePathIn struct {
	SessionArg
	From string `json:"from" sessiond:"path" jsonschema:"The file or directory to move, relative to the repository root."`
	To   string `json:"to" sessiond:"path" jsonschema:"Its new path; must not exist yet."`
}

// ReadFilesOut is what read_files shows: each file as read_file shows it,
// and the paths left out for the result's size.
type ReadFilesOut struct {
	Files   []FileContent `json:"files"`
	Skipped []string      `json:"not_shown,omitempty"`
}

// Written is what a write, edit, delete or move did.
type Written struct {
	Path     string   `json:"path"`
	To       string   `json:"to,omitempty"`
	ETag     string   `json:"etag,omitempty"`
	Status   string   `json:"status,omitempty"`
	Size     int64    `json:"size,omitempty"`
	Seq      int64    `json:"seq,omitempty"`
	DryRun   bool     `json:"dry_run,omitempty"`
	Replaced []int    `json:"replacements,omitempty"`
	Diff     string   `json:"diff,omitempty"`
	Paths    []string `json:"paths,omitempty"`
}

func (s *server) fileTools(ms *mcp.Server) {
	addTool[FileContent](s, ms, toolSpec{name: toolReadFile, title: "Read a file", kind: readOnly, description: "Read a text file of the session with numbered lines (like cat -n), its total line count and its ETag (pass the ETag as if_match to edit_file or write_file). " +
		"Shows 2000 lines from offset by default; lines over 2000 characters are cut with a note. A binary file is described (size, type), not shown."}, (*server).readFile)
	addTool[ReadFilesOut](s, ms, toolSpec{name: toolReadFiles, title: "Read several files", kind: readOnly, description: "Read several files at once, each as read_file shows it. A file that cannot be read gets its error in place; the others are still shown."}, (*server).readFiles)
	addTool[Written](s, ms, toolSpec{name: toolWriteFile, title: "Write a file", kind: destructive, idempotent: true, description: "Create a file or replace its whole content. To change part of a file use edit_file. " +
		"Pass if_match (the ETag from read_file) when overwriting so that a change made since you read it is not lost."}, (*server).writeFile)
	addTool[Written](s, ms, toolSpec{name: toolEditFile, title: "Edit a file", kind: destructive, description: "Replace exact text in a file: a list of {old_text, new_text, replace_all} applied in order, all or none. " +
		"Each old_text must occur exactly once unless replace_all; if it occurs zero or several times nothing is written and the error lists the candidate lines with context (for zero, the closest near-match). " +
		"Line endings and a missing final newline are kept. Returns the unified diff; dry_run shows it without writing."}, (*server).editFile)
	addTool[Written](s, ms, toolSpec{name: toolDeletePath, title: "Delete a file or directory", kind: destructive, idempotent: true, description: "Delete a file, or a directory with recursive. Only the session's view changes; the base commit keeps it, and rollback can bring it back."}, (*server).deletePath)
	addTool[Written](s, ms, toolSpec{name: toolMovePath, title: "Move or rename", kind: destructive, description: "Move or rename a file or directory within the session. The destination must not exist."}, (*server).movePath)
}

func (s *server) readFile(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ReadFileIn) (result, error) {
	if in.Path == "" {
		return result{}, badRequest("path is required")
	}
	data, meta, err := s.b.ReadFile(ctx, sid, in.Path)
	if err != nil {
		return result{}, err
	}
	fc, text := renderFile(in.Path, data, meta, in.Offset, in.Limit, s.budget())
	return result{text: text, data: fc}, nil
}

// renderFile shows lines [offset, offset+limit) of a file, numbered, within
// the budget.
func renderFile(path string, data []byte, meta client.FileMeta, offset, limit int, bud *budget) (FileContent, string) {
	fc := FileContent{Path: path, ETag: meta.OID, Source: meta.Source, Status: meta.Status, Mode: meta.Mode, Size: int64(len(data))}
	var b strings.Builder
	if meta.Type == "symlink" || meta.Mode == "120000" {
		fc.Symlink = string(data)
		fmt.Fprintf(&b, "%s is a symbolic link to %q (ETag %s).\n", path, data, meta.OID)
		fc.Content = string(data)
		return fc, b.String()
	}
	if meta.Binary {
		fc.Binary, fc.ContentType = true, http.DetectContentType(data)
		fmt.Fprintf(&b, "%s is a binary file of %d bytes (%s), not shown. ETag %s.\n", path, len(data), fc.ContentType, meta.OID)
		return fc, b.String()
	}
	content := string(data)
	fc.NoFinalEOL = content != "" && !strings.HasSuffix(content, "\n")
	fc.LineEndings = "LF"
	if strings.Contains(content, "\r\n") {
		fc.LineEndings = "CRLF"
	}
	var lines []string
	if content != "" {
		lines = splitKeep(content)
	}
	fc.TotalLines = len(lines)
	if offset <= 0 {
		offset = 1
	}
	if limit <= 0 {
		limit = defaultReadLines
	}
	fc.Offset = offset
	var body, raw strings.Builder
	n := offset
	for ; n <= len(lines) && n < offset+limit; n++ {
		l := lines[n-1]
		shown := l
		if p, cut := firstChars(l, maxLineChars); cut {
			shown = p + fmt.Sprintf(" … [line cut: %d characters in all]", utf8.RuneCountInString(l))
			fc.CutLines = append(fc.CutLines, n)
		}
		row := fmt.Sprintf("%6d\t%s\n", n, shown)
		if !bud.take(len(row)) {
			break
		}
		body.WriteString(row)
		raw.WriteString(l)
		raw.WriteByte('\n')
	}
	fc.Lines = n - offset
	fc.Content = raw.String()
	if n <= len(lines) {
		fc.NextOffset = n
	}
	// The header first, then the lines, then what was left out.
	fmt.Fprintf(&b, "%s: %d lines, ETag %s", path, fc.TotalLines, meta.OID)
	if meta.Status != "" && meta.Status != "unchanged" {
		fmt.Fprintf(&b, ", %s in this session", meta.Status)
	}
	if fc.LineEndings == "CRLF" {
		b.WriteString(", CRLF line endings (shown without the CR; edit_file keeps them)")
	}
	b.WriteString(".\n")
	switch {
	case len(lines) == 0:
		b.WriteString("(the file is empty)\n")
	case offset > len(lines):
		fmt.Fprintf(&b, "(offset %d is past the end of the file)\n", offset)
	}
	b.WriteString(body.String())
	if fc.NoFinalEOL && n > len(lines) && len(lines) > 0 {
		b.WriteString("(no newline at the end of the file)\n")
	}
	if fc.NextOffset > 0 {
		fmt.Fprintf(&b, "[shown lines %d–%d of %d; call read_file with offset %d for more]\n", offset, n-1, fc.TotalLines, n)
	}
	if len(fc.CutLines) > 0 {
		fmt.Fprintf(&b, "[%d lines were cut at %d characters; grep finds text in them]\n", len(fc.CutLines), maxLineChars)
	}
	return fc, b.String()
}

func (s *server) readFiles(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ReadFilesIn) (result, error) {
	if len(in.Paths) == 0 {
		return result{}, badRequest("paths is empty")
	}
	bud := s.budget()
	var b strings.Builder
	var out ReadFilesOut
	for i, p := range in.Paths {
		if bud.left < 200 {
			out.Skipped = in.Paths[i:]
			fmt.Fprintf(&b, "\n[cut: %d more files not shown (%s); read them with read_files or read_file]\n", len(out.Skipped), strings.Join(out.Skipped, ", "))
			break
		}
		if i > 0 {
			b.WriteString("\n")
		}
		data, meta, err := s.b.ReadFile(ctx, sid, p)
		if err != nil {
			te := toolError(err)
			fc := FileContent{Path: p}
			fc.Error = &struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}{te.Code, te.Message}
			out.Files = append(out.Files, fc)
			line := fmt.Sprintf("%s: error %s: %s\n", p, te.Code, te.Message)
			bud.take(len(line))
			b.WriteString(line)
			continue
		}
		fc, text := renderFile(p, data, meta, 1, defaultReadLines, bud)
		out.Files = append(out.Files, fc)
		b.WriteString(text)
	}
	return result{text: b.String(), data: out}, nil
}

func (s *server) writeFile(ctx context.Context, _ *mcp.CallToolRequest, sid string, in WriteFileIn) (result, error) {
	if in.Path == "" {
		return result{}, badRequest("path is required")
	}
	wr, err := s.b.WriteFile(ctx, sid, in.Path, []byte(in.Content), client.WriteOptions{IfMatch: in.IfMatch})
	if err != nil {
		return result{}, err
	}
	w := Written{Path: in.Path, Seq: wr.Mutation.Seq}
	if wr.File != nil {
		w.ETag, w.Status, w.Size = wr.File.OID, wr.File.Status, wr.File.Size
	}
	text := fmt.Sprintf("Wrote %s: %d bytes, %d lines, now %s in this session, ETag %s.\n", in.Path, len(in.Content), lineCount(in.Content), statusWord(w.Status), w.ETag)
	if wr.Mutation.Seq == 0 {
		text = fmt.Sprintf("%s already had this content; nothing changed. ETag %s.\n", in.Path, w.ETag)
	}
	return result{text: text, data: w}, nil
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func statusWord(st string) string {
	if st == "" || st == "unchanged" {
		return "the same as the base"
	}
	return st
}

func (s *server) editFile(ctx context.Context, _ *mcp.CallToolRequest, sid string, in EditFileIn) (result, error) {
	if in.Path == "" {
		return result{}, badRequest("path is required")
	}
	data, meta, err := s.b.ReadFile(ctx, sid, in.Path)
	if err != nil {
		return result{}, err
	}
	if in.IfMatch != "" && strings.Trim(in.IfMatch, `"`) != meta.OID {
		return result{}, &Error{Code: "precondition_failed",
			Message: fmt.Sprintf("%s is at version %s, not %s: it changed since you read it; nothing was changed", in.Path, meta.OID, in.IfMatch),
			Details: map[string]any{"path": in.Path, "current": meta.OID}}
	}
	if meta.Type == "symlink" || meta.Mode == "120000" {
		return result{}, badRequest("%s is a symbolic link; write_file replaces its target", in.Path)
	}
	if meta.Binary {
		return result{}, badRequest("%s is a binary file; edit_file changes text (write_file replaces a whole file)", in.Path)
	}
	out, counts, err := applyEdits(ctx, string(data), in.Edits)
	if err != nil {
		return result{}, err
	}
	// One engine call writes (or, in a dry run, checks the write against
	// the path rules, policy and limits) conditionally on the version
	// read, and returns the diff the session's diff would show.
	res, err := s.b.Edits(ctx, sid, apitypes.EditsRequest{DryRun: in.DryRun, Diff: true,
		Edits: []apitypes.Edit{{Op: apitypes.OpWrite, Path: in.Path, Content: out, IfMatch: meta.OID}}})
	if err != nil {
		return result{}, err
	}
	w := Written{Path: in.Path, DryRun: in.DryRun, Replaced: counts, Diff: res.Diff, ETag: meta.OID, Size: int64(len(out))}
	if in.DryRun {
		return result{text: fmt.Sprintf("Dry run: nothing was written. %s would change like this:\n%s", in.Path, res.Diff), data: w}, nil
	}
	for _, c := range res.Changes {
		if c.Path == in.Path {
			w.Seq, w.ETag = res.Seq, c.New
		}
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	text := fmt.Sprintf("Edited %s: %d replacement(s), new ETag %s.\n%s", in.Path, total, w.ETag, res.Diff)
	return result{text: text, data: w}, nil
}

func (s *server) deletePath(ctx context.Context, _ *mcp.CallToolRequest, sid string, in DeletePathIn) (result, error) {
	if in.Path == "" {
		return result{}, badRequest("path is required")
	}
	wr, err := s.b.DeleteFile(ctx, sid, in.Path, in.Recursive)
	if err != nil {
		return result{}, err
	}
	w := Written{Path: in.Path, Seq: wr.Mutation.Seq, Paths: wr.Mutation.Paths}
	text := fmt.Sprintf("Deleted %s (%d path(s)); rollback to a checkpoint brings it back.\n", in.Path, max(len(wr.Mutation.Paths), 1))
	return result{text: text, data: w}, nil
}

func (s *server) movePath(ctx context.Context, _ *mcp.CallToolRequest, sid string, in MovePathIn) (result, error) {
	if in.From == "" || in.To == "" {
		return result{}, badRequest("from and to are required")
	}
	res, err := s.b.Edits(ctx, sid, apitypes.EditsRequest{Edits: []apitypes.Edit{{Op: "move", Path: in.From, To: in.To}}})
	if err != nil {
		return result{}, err
	}
	w := Written{Path: in.From, To: in.To, Seq: res.Seq}
	for _, c := range res.Changes {
		w.Paths = append(w.Paths, c.Path)
	}
	return result{text: fmt.Sprintf("Moved %s to %s (%d path(s) changed).\n", in.From, in.To, len(res.Changes)), data: w}, nil
}
