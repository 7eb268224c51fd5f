package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// The files route: raw content, ETag = "<blob id>", single Range,
// X-Sessiond-Source overlay|base, X-Sessiond-Mode.

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

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	rng := r.Header.Get("Range")
	if rng == "" {
		data, fi, err := s.m.Read(r.Context(), id, p, 0, -1)
		if err != nil {
			return err
		}
		setFileHeaders(w, fi)
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, fi.OID) {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
		w.Header().Set("Accept-Ranges", "bytes")
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data)
		return nil
	}
	fi, err := s.m.Stat(r.Context(), id, p)
	if err != nil {
		return err
	}
	off, n, ok := parseRange(rng, fi.Size)
	if !ok {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", fi.Size))
		return &Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: CodeBadRequest,
			Message: fmt.Sprintf("range %q does not fit a file of %d bytes (one range only)", rng, fi.Size)}
	}
	data, fi2, err := s.m.Read(r.Context(), id, p, off, n)
	if err != nil {
		return err
	}
	if fi2.OID != fi.OID {
		// Changed between stat and read: the client asked for a range of
		// one version; serve it whole as the new version instead.
		data, fi2, err = s.m.Read(r.Context(), id, p, 0, -1)
		if err != nil {
			return err
		}
		setFileHeaders(w, fi2)
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data)
		return nil
	}
	setFileHeaders(w, fi2)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+int64(len(data))-1, fi.Size))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusPartialContent)
	_, _ = w.Write(data)
	return nil
}

// parseRange parses one byte range of a file of size bytes.
func parseRange(h string, size int64) (off, n int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false
	}
	if first == "" { // suffix: the last N bytes
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k <= 0 {
			return 0, 0, false
		}
		k = min(k, size)
		return size - k, k, size > 0
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 || a >= size {
		return 0, 0, false
	}
	b := size - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return 0, 0, false
		}
		b = min(b, size-1)
	}
	return a, b - a + 1, true
}

func etagMatches(header string, oid gitstore.OID) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == `"`+oid.String()+`"` {
			return true
		}
	}
	return false
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
	if opts.IfMatch, err = s.ifMatch(r, id, p); err != nil {
		return err
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	// Only for the status code: whether the write created the file.
	_, statErr := s.m.Stat(r.Context(), id, p)
	fi, mu, err := s.m.Write(ctxWithoutCancel(r), id, p, data, opts)
	if err != nil {
		return err
	}
	s.metrics.overlayBytes.Add(float64(len(data)))
	setFileHeaders(w, fi)
	status := http.StatusOK
	if statErr != nil {
		status = http.StatusCreated
	}
	info := toFileInfo(fi)
	writeJSON(w, status, WriteResult{File: &info, Mutation: toMutation(mu)})
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
	ifMatch, err := s.ifMatch(r, id, p)
	if err != nil {
		return err
	}
	mu, err := s.m.Remove(ctxWithoutCancel(r), id, p, session.DeleteOptions{Recursive: recursive, IfMatch: ifMatch})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, WriteResult{Mutation: toMutation(mu)})
	return nil
}

// ifMatch reads the If-Match header of a request that changes the file
// at p: nil without one, the quoted blob id it names, or for "*" the
// file's current version (412 when there is no file).
func (s *Server) ifMatch(r *http.Request, id uuid.UUID, p string) (*gitstore.OID, error) {
	im := strings.TrimSpace(r.Header.Get("If-Match"))
	switch im {
	case "":
		return nil, nil
	case "*":
		fi, err := s.m.Stat(r.Context(), id, p)
		if errors.Is(err, session.ErrNotFound) {
			return nil, &session.PreconditionError{Path: p}
		}
		if err != nil {
			return nil, err
		}
		if fi.Type == "dir" {
			return nil, badRequest("If-Match: %q is a directory, which has no version", p)
		}
		return &fi.OID, nil
	}
	oid, err := gitstore.ParseOID(strings.Trim(strings.TrimPrefix(im, "W/"), `"`))
	if err != nil {
		return nil, badRequest("If-Match %q: want a quoted blob id", im)
	}
	return &oid, nil
}
