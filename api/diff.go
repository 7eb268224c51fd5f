package api

import (
	"encoding/json"
	"net/http"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/highlight"
	"github.com/sessiond/sessiond/merge"
)

func modeText(m gitstore.Mode) string {
	if m == 0 {
		return ""
	}
	return m.String()
}

// diff serves GET /v1/sessions/{id}/diff?against=base|<checkpoint>&format=unified|json.
// The engine leaves out the files the session's policy does not let it
// read.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = "unified"
	}
	if format != "unified" && format != "json" {
		return badRequest("format %q: use unified or json", format)
	}
	d, err := s.m.Diff(r.Context(), id, q.Get("against"))
	if err != nil {
		return err
	}
	return writeDiff(w, r, format, d.From, d.To, d.Patch)
}

// writeDiff answers with patch as unified text (what git apply takes) or
// as JSON; from and to name the two trees or commits compared. The
// request's ?path= (repeatable) keeps only those files; ?spans=false
// leaves the JSON without syntax tokens.
func writeDiff(w http.ResponseWriter, r *http.Request, format string, from, to gitstore.OID, patch *merge.Patch) error {
	q := r.URL.Query()
	spans := true
	switch v := q.Get("spans"); v {
	case "", "true":
	case "false":
		spans = false
	default:
		return badRequest("query spans=%q: use true or false", v)
	}
	if paths, ok := q["path"]; ok {
		patch.Only(paths)
	}
	if format == "unified" {
		w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(patch.Unified())
		return nil
	}
	if spans {
		patch.Highlight()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(toDiff(from, to, patch))
}

// toDiff is a patch in its JSON form; a file's hunks are numbered by
// their position, the indexes a partial accept selects.
func toDiff(from, to gitstore.OID, patch *merge.Patch) apitypes.Diff {
	out := apitypes.Diff{From: oidText(from), To: oidText(to), Files: make([]apitypes.FileDiff, 0, len(patch.Files)), Stats: apitypes.Stats(patch.Stats)}
	for _, f := range patch.Files {
		fd := apitypes.FileDiff{
			Path: f.Path(), Status: string(f.Status), OldPath: f.OldPath, NewPath: f.NewPath,
			OldMode: modeText(f.OldMode), NewMode: modeText(f.NewMode), OldOID: oidText(f.OldOID), NewOID: oidText(f.NewOID),
			Similarity: f.Similarity, Binary: f.Binary, Insertions: f.Insertions, Deletions: f.Deletions, Hunks: make([]apitypes.Hunk, len(f.Hunks)),
		}
		for i, h := range f.Hunks {
			fd.Hunks[i] = apitypes.Hunk{OldStart: h.OldStart, OldLines: h.OldLines, NewStart: h.NewStart, NewLines: h.NewLines,
				Lines: h.Lines, Function: h.Function, Spans: toSpans(h.Spans)}
		}
		out.Files = append(out.Files, fd)
	}
	return out
}

func toSpans(lines [][]highlight.Span) [][]apitypes.Span {
	if lines == nil {
		return nil
	}
	out := make([][]apitypes.Span, len(lines))
	for i, l := range lines {
		if l == nil {
			continue
		}
		out[i] = make([]apitypes.Span, len(l))
		for j, s := range l {
			out[i][j] = apitypes.Span(s)
		}
	}
	return out
}
