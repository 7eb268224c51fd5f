package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/session"
)

// Error codes of the API; stable, clients switch on them.
const (
	CodeBadRequest         = "bad_request"
	CodeInvalidPath        = "invalid_path"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeConflict           = "conflict"
	CodePreconditionFailed = "precondition_failed"
	CodeTooLarge           = "too_large"
	CodeSessionClosed      = "session_closed"
	CodeSessionBusy        = "session_busy"
	CodeInternal           = "internal"
	CodeUnavailable        = "unavailable"
	CodeMethodNotAllowed   = "method_not_allowed"
	// CodeRangeNotSatisfiable is a 416: a Range that no part of the file
	// satisfies; Content-Range carries the size.
	CodeRangeNotSatisfiable = "range_not_satisfiable"
)

// Error is an API error: an HTTP status, a stable code, a message for
// people and details for programs. It is the body {"error": …} on the wire.
type Error struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// MarshalJSON flattens the details beside code and message.
func (e *Error) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Details)+2)
	for k, v := range e.Details {
		m[k] = v
	}
	m["code"] = e.Code
	m["message"] = e.Message
	return json.Marshal(m)
}

func newError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return newError(http.StatusBadRequest, CodeBadRequest, format, args...)
}

// mapError is the one place that turns an error from any layer (engine,
// store, overlay, gitstore, request decoding) into an API error. Unknown
// errors are internal; their text is logged, not sent.
func mapError(err error) *Error {
	var (
		apiErr  *Error
		pathErr *overlay.PathError
		maxErr  *http.MaxBytesError
		preErr  *session.PreconditionError
		cfErr   *session.ConflictError
		mgErr   *merge.ConflictError
		srErr   *session.StaleReadsError
		objErr  *gitstore.ObjectError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &objErr):
		// Damage, whatever path led there: never "not found", which would
		// tell a client an acknowledged file is gone.
		problem := "missing"
		if errors.Is(objErr, gitstore.ErrCorrupt) {
			problem = "corrupt"
		}
		return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
			Message: fmt.Sprintf("repository object %s is %s", objErr.ID, problem),
			Details: map[string]any{"object": objErr.ID.String(), "problem": problem}}
	case errors.As(err, &pathErr):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidPath, Message: err.Error(),
			Details: map[string]any{"rule": string(pathErr.Rule), "path": pathErr.Path}}
	case errors.As(err, &maxErr):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
			Message: fmt.Sprintf("request body over the limit of %d bytes", maxErr.Limit),
			Details: map[string]any{"limit": maxErr.Limit}}
	case errors.Is(err, session.ErrTooLarge):
		return newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "%s", err.Error())
	case errors.As(err, &preErr):
		return &Error{Status: http.StatusPreconditionFailed, Code: CodePreconditionFailed, Message: err.Error(),
			Details: map[string]any{"path": preErr.Path, "current": preErr.Current}}
	case errors.Is(err, session.ErrPrecondition):
		return newError(http.StatusPreconditionFailed, CodePreconditionFailed, "%s", err.Error())
	case errors.Is(err, session.ErrSessionClosed):
		return newError(http.StatusConflict, CodeSessionClosed, "%s", err.Error())
	case errors.Is(err, session.ErrBusy):
		return newError(http.StatusConflict, CodeSessionBusy, "%s", err.Error())
	case errors.As(err, &mgErr):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error(),
			Details: map[string]any{"conflicts": toConflicts(mgErr.Conflicts)}}
	case errors.As(err, &srErr):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error(),
			Details: map[string]any{"stale_reads": toStaleReads(srErr.Reads)}}
	case errors.As(err, &cfErr):
		d := map[string]any{"field": cfErr.Field, "current": cfErr.Current}
		d["current_"+cfErr.Field] = cfErr.Current
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error(), Details: d}
	case errors.Is(err, session.ErrConflict), errors.Is(err, session.ErrDuplicate),
		errors.Is(err, gitstore.ErrRefConflict), errors.Is(err, gitstore.ErrRefLocked):
		return newError(http.StatusConflict, CodeConflict, "%s", err.Error())
	case errors.Is(err, session.ErrReadOnly), errors.Is(err, session.ErrForbidden):
		return newError(http.StatusForbidden, CodeForbidden, "%s", err.Error())
	case errors.Is(err, session.ErrNotFound), errors.Is(err, gitstore.ErrNotFound):
		return newError(http.StatusNotFound, CodeNotFound, "%s", err.Error())
	case errors.Is(err, session.ErrInvalid), errors.Is(err, overlay.ErrIsDir), errors.Is(err, overlay.ErrNotDir),
		errors.Is(err, gitstore.ErrInvalidOID), errors.Is(err, gitstore.ErrAmbiguous), errors.Is(err, gitstore.ErrInvalidRef):
		return newError(http.StatusBadRequest, CodeBadRequest, "%s", err.Error())
	case errors.Is(err, gitstore.ErrInvalidMode):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidPath, Message: err.Error(),
			Details: map[string]any{"rule": string(overlay.RuleBadFilemode)}}
	case errors.Is(err, session.ErrUnavailable), errors.Is(err, session.ErrNoWorkdir), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return newError(http.StatusServiceUnavailable, CodeUnavailable, "%s", err.Error())
	}
	return newError(http.StatusInternalServerError, CodeInternal, "internal error")
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error *Error `json:"error"`
}
