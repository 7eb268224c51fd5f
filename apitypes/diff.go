package apitypes

// FileDiff is one file of a diff in its JSON form. A file's hunks are
// numbered by their position, the indexes a partial accept selects.
type FileDiff struct {
	Path       string `json:"path"`
	Status     string `json:"status"`
	OldPath    string `json:"old_path,omitempty"`
	NewPath    string `json:"new_path,omitempty"`
	OldMode    string `json:"old_mode,omitempty"`
	NewMode    string `json:"new_mode,omitempty"`
	OldOID     string `json:"old_oid,omitempty"`
	NewOID     string `json:"new_oid,omitempty"`
	Similarity int    `json:"similarity,omitempty"`
	Binary     bool   `json:"binary"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Hunks      []Hunk `json:"hunks"`
}

// Hunk is one hunk of a file's line diff. Lines start with ' ', '-' or
// '+'. Function is its function context, the text git prints after
// "@@ … @@" (the nearest line above the hunk that the file's diff driver
// takes for a function's start); empty when there is none.
type Hunk struct {
	OldStart int      `json:"old_start"`
	OldLines int      `json:"old_lines"`
	NewStart int      `json:"new_start"`
	NewLines int      `json:"new_lines"`
	Lines    []string `json:"lines"`
	Function string   `json:"function,omitempty"`
	// Spans are the syntax tokens of each line, one entry per line of
	// Lines (null for a line with none): characters [start, end) of the
	// line's text (after its ' ', '-' or '+', counted in Unicode code
	// points) and chroma's short class name ("k" keyword, "s2" string,
	// "c1" comment, "nf" function name, …). Absent for a file chroma has
	// no lexer for (chosen by file name), over 256 KiB, or past 4 MiB of
	// highlighted text in one diff.
	Spans [][]Span `json:"spans,omitempty"`
}

// Span is one syntax token of a diff line.
type Span struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Class string `json:"class"`
}

// Diff is a diff in its JSON form.
type Diff struct {
	From  string     `json:"from"` // tree ids
	To    string     `json:"to"`
	Files []FileDiff `json:"files"`
	Stats Stats      `json:"stats"`
}

// Stats sums a diff up, as git diff --shortstat does.
type Stats struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// FileLines are lines of a file at one side of a changeset's revision
// (GET /v1/changesets/{id}/files/{path}?lines=a-b&side=base|head): what a
// reviewer expands around a hunk. Start and end are the first and last
// line given (1-based, inclusive; end stops at the file's end), total
// its number of lines. Lines keep their newline (the last may have
// none); spans are as a hunk's.
type FileLines struct {
	Revision int      `json:"revision"`
	Side     string   `json:"side"`
	Path     string   `json:"path"`
	OID      string   `json:"oid"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	Total    int      `json:"total"`
	Lines    []string `json:"lines"`
	Spans    [][]Span `json:"spans,omitempty"`
}
