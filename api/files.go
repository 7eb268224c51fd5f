package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/session"
)

// The files route: raw content, ETag = "<blob id>", single Range,
// X-Sessiond-Source overlay|base, X-Sessiond-Mode, and on a GET
// X-Sessiond-Binary.

func setFileHeaders(w http.ResponseWriter, fi session.FileInfo) {
	h := w.Header()
	if !fi.OID.IsZero() {
		h.Set("ETag", `"`+fi.OID.String()+`"`)
	}
	h.Set("X-Sessiond-Source", string(fi.Source))
	h.Set("X-Sessiond-Mode", fi.Mode.String())
	h.Set("X-Sessiond-Type", fi.Type)
	h.Set("X-Sessiond-Status", fi.Status.String())
}

func (s *Server) statFile(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	fi, err := s.m.Stat(r.Context(), id, r.PathValue("path"))
	if err != nil {
		return err
	}
	setFileHeaders(w, fi)
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size, 10))
	w.Header().Set("Accept-Ranges", "bytes")
	w.WriteHeader(http.StatusOK)
	return nil
}

// readFile serves a file's content through http.ServeContent, which owns
// ranges (one or several, as multipart/byteranges), If-Range and the
// conditional GETs (If-None-Match → 304, If-Match → 412) against the ETag,
// the blob id. Its error answers are turned into the API's JSON errors:
// 416 with code range_not_satisfiable and Content-Range "bytes */size",
// 412 with precondition_failed.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	data, fi, err := s.m.Read(r.Context(), id, p, 0, -1)
	if err != nil {
		return err
	}
	setFileHeaders(w, fi)
	// Whether the file is binary is git's rule, the one the engine's diff
	// and search apply, so a client need not know it.
	w.Header().Set("X-Sessiond-Binary", strconv.FormatBool(merge.IsBinary(data)))
	w.Header().Set("Content-Type", "application/octet-stream")
	if rng := strings.TrimSpace(r.Header.Get("Range")); rng != "" && !strings.HasPrefix(rng, "bytes=") {
		// A range unit the server does not know is ignored (RFC 9110
		// §14.2): the whole file, 200.
		r.Header.Del("Range")
	}
	cw := &contentWriter{ResponseWriter: w, path: p, rng: r.Header.Get("Range"), size: int64(len(data))}
	http.ServeContent(cw, r, "", time.Time{}, bytes.NewReader(data))
	return nil
}

// contentWriter is the ResponseWriter of http.ServeContent: it passes
// success through and replaces ServeContent's plain-text error answers with
// the API's JSON errors.
type contentWriter struct {
	http.ResponseWriter
	path, rng string
	size      int64
	swallowed bool // an error answer was written; ServeContent's body is dropped
}

func (c *contentWriter) WriteHeader(code int) {
	var e *apitypes.Error
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		c.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", c.size))
		e = &apitypes.Error{Status: code, Code: apitypes.CodeRangeNotSatisfiable,
			Message: fmt.Sprintf("range %q does not fit %q, a file of %d bytes", c.rng, c.path, c.size),
			Details: map[string]any{"size": c.size}}
	case http.StatusPreconditionFailed:
		e = &apitypes.Error{Status: code, Code: apitypes.CodePreconditionFailed, Message: fmt.Sprintf("%q is at version %s", c.path, strings.Trim(c.Header().Get("ETag"), `"`)),
			Details: map[string]any{"path": c.path, "current": strings.Trim(c.Header().Get("ETag"), `"`)}}
	default:
		c.ResponseWriter.WriteHeader(code)
		return
	}
	c.swallowed = true
	c.Header().Del("X-Content-Type-Options")
	writeError(c.ResponseWriter, e)
}

func (c *contentWriter) Write(b []byte) (int, error) {
	if c.swallowed {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	var opts session.WriteOptions
	if m := r.Header.Get("X-Sessiond-Mode"); m != "" {
		if opts.Mode, err = parseFileMode(m); err != nil {
			return err
		}
	}
	switch inm := strings.TrimSpace(r.Header.Get("If-None-Match")); inm {
	case "":
	case "*":
		opts.IfNoneMatch = true
	default:
		return badRequest("If-None-Match on a write must be *")
	}
	if opts.IfMatch, opts.IfExists, err = ifMatch(r); err != nil {
		return err
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	fi, mu, err := s.m.Write(ctxWithoutCancel(r), id, p, data, opts)
	if err != nil {
		return err
	}
	s.metrics.overlayBytes.Add(float64(len(data)))
	setFileHeaders(w, fi)
	status := http.StatusOK
	if len(mu.Old) == 1 && mu.Old[0].IsZero() {
		status = http.StatusCreated // no file was there before the write
	}
	info := toFileInfo(fi)
	writeJSON(w, status, apitypes.WriteResult{File: &info, Mutation: toMutation(mu)})
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	if r.Header.Get("If-None-Match") != "" {
		return badRequest("If-None-Match does not apply to a delete; use If-Match")
	}
	version, anyVersion, err := ifMatch(r)
	if err != nil {
		return err
	}
	mu, err := s.m.Remove(ctxWithoutCancel(r), id, p, session.DeleteOptions{Recursive: recursive, IfMatch: version, IfExists: anyVersion})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.WriteResult{Mutation: toMutation(mu)})
	return nil
}

// ifMatch reads the If-Match header of a request that changes a file:
// nil without one, the quoted blob id it names, or for "*" anyVersion
// (the engine checks that the file exists, in the write itself).
func ifMatch(r *http.Request) (oid *gitstore.OID, anyVersion bool, err error) {
	im := strings.TrimSpace(r.Header.Get("If-Match"))
	switch im {
	case "":
		return nil, false, nil
	case "*":
		return nil, true, nil
	}
	id, err := gitstore.ParseOID(strings.Trim(strings.TrimPrefix(im, "W/"), `"`))
	if err != nil {
		return nil, false, badRequest("If-Match %q: want a quoted blob id", im)
	}
	return &id, false, nil
}
