package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/worktree"
)

func newError(status int, code, format string, args ...any) *apitypes.Error {
	return &apitypes.Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apitypes.Error {
	return newError(http.StatusBadRequest, apitypes.CodeBadRequest, format, args...)
}

// WriteTimeoutError is a request that writes still unfinished (waiting for
// a session's lock, or the store) when the write timeout passed.
type WriteTimeoutError struct {
	Timeout time.Duration
	Err     error // what the engine was doing: nil until timedOut sets it
}

func (e *WriteTimeoutError) Error() string {
	msg := fmt.Sprintf("the request did not finish within the write timeout of %s (sessiond serve --write-timeout)", e.Timeout)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *WriteTimeoutError) Unwrap() error { return e.Err }

// timedOut names the write timeout as the cause of err when err is ctx's
// deadline passing and that deadline is the write timeout.
func timedOut(ctx context.Context, err error) error {
	var wt *WriteTimeoutError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(context.Cause(ctx), &wt) {
		return err
	}
	return &WriteTimeoutError{Timeout: wt.Timeout, Err: err}
}

// mapError is the one place that turns an error from any layer (engine,
// store, overlay, gitstore, request decoding) into an API error. Unknown
// errors are internal; their text is logged, not sent.
func mapError(err error) *apitypes.Error {
	var (
		apiErr  *apitypes.Error
		pathErr *overlay.PathError
		maxErr  *http.MaxBytesError
		preErr  *session.PreconditionError
		cfErr   *record.ConflictError
		mgErr   *merge.ConflictError
		unErr   *session.UnresolvedError
		srErr   *changeset.StaleReadsError
		ckErr   *changeset.ChecksRequiredError
		objErr  *gitstore.ObjectError
		nsErr   *record.NoSpaceError
		wtErr   *worktree.DirtyError
		toErr   *WriteTimeoutError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &toErr):
		return &apitypes.Error{Status: http.StatusServiceUnavailable, Code: apitypes.CodeUnavailable, Message: err.Error(),
			Details: map[string]any{"timeout": toErr.Timeout.String()}}
	case errors.As(err, &nsErr):
		// What filled, not how: the write's own error (paths of the
		// host) goes to the log.
		d := map[string]any{"filled": nsErr.What}
		if nsErr.Repo != "" {
			d["repo"] = nsErr.Repo
		}
		return &apitypes.Error{Status: http.StatusInsufficientStorage, Code: apitypes.CodeInsufficientStorage,
			Message: (&record.NoSpaceError{What: nsErr.What, Repo: nsErr.Repo}).Error() + "; nothing of this request was written, and writes resume once space is freed",
			Details: d}
	case errors.As(err, &objErr):
		// Damage, whatever path led there: never "not found", which would
		// tell a client an acknowledged file is gone.
		problem := "missing"
		if errors.Is(objErr, gitstore.ErrCorrupt) {
			problem = "corrupt"
		}
		return &apitypes.Error{Status: http.StatusInternalServerError, Code: apitypes.CodeInternal,
			Message: fmt.Sprintf("repository object %s is %s", objErr.ID, problem),
			Details: map[string]any{"object": objErr.ID.String(), "problem": problem}}
	case errors.As(err, &pathErr):
		return &apitypes.Error{Status: http.StatusBadRequest, Code: apitypes.CodeInvalidPath, Message: err.Error(),
			Details: map[string]any{"rule": string(pathErr.Rule), "path": pathErr.Path}}
	case errors.As(err, &maxErr):
		return &apitypes.Error{Status: http.StatusRequestEntityTooLarge, Code: apitypes.CodeTooLarge,
			Message: fmt.Sprintf("request body over the limit of %d bytes", maxErr.Limit),
			Details: map[string]any{"limit": maxErr.Limit}}
	case errors.Is(err, repos.ErrSecretTooLarge):
		return &apitypes.Error{Status: http.StatusRequestEntityTooLarge, Code: apitypes.CodeTooLarge, Message: err.Error(),
			Details: map[string]any{"limit": secret.MaxValueBytes}}
	case errors.Is(err, session.ErrTooLarge):
		return newError(http.StatusRequestEntityTooLarge, apitypes.CodeTooLarge, "%s", err.Error())
	case errors.As(err, &preErr):
		return &apitypes.Error{Status: http.StatusPreconditionFailed, Code: apitypes.CodePreconditionFailed, Message: err.Error(),
			Details: map[string]any{"path": preErr.Path, "current": preErr.Current}}
	case errors.Is(err, session.ErrPrecondition):
		return newError(http.StatusPreconditionFailed, apitypes.CodePreconditionFailed, "%s", err.Error())
	case errors.Is(err, record.ErrSessionClosed):
		return newError(http.StatusConflict, apitypes.CodeSessionClosed, "%s", err.Error())
	case errors.Is(err, session.ErrServicesHoldView):
		return newError(http.StatusConflict, apitypes.CodeConflict, "%s", err.Error())
	case errors.Is(err, session.ErrBusy):
		return newError(http.StatusConflict, apitypes.CodeSessionBusy, "%s", err.Error())
	case errors.As(err, &unErr):
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeUnresolvedConflicts, Message: err.Error(),
			Details: map[string]any{"conflicts": toKeptConflicts(unErr.Conflicts)}}
	case errors.As(err, &mgErr):
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeConflict, Message: err.Error(),
			Details: map[string]any{"conflicts": toConflicts(mgErr.Conflicts)}}
	case errors.As(err, &wtErr):
		// The repository's work tree, where the branch is checked out,
		// has changes of its own: named, nothing moved.
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeConflict, Message: err.Error(),
			Details: map[string]any{"dirty_paths": wtErr.Paths}}
	case errors.As(err, &ckErr):
		checks := make([]apitypes.Check, len(ckErr.Checks))
		for i, c := range ckErr.Checks {
			checks[i] = toCheck(c)
		}
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeChecksRequired, Message: err.Error(),
			Details: map[string]any{"checks": checks, "revision": ckErr.Revision}}
	case errors.As(err, &srErr):
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeConflict, Message: err.Error(),
			Details: map[string]any{"stale_reads": toStaleReads(srErr.Reads)}}
	case errors.As(err, &cfErr):
		d := map[string]any{"field": cfErr.Field, "current": cfErr.Current}
		d["current_"+cfErr.Field] = cfErr.Current
		return &apitypes.Error{Status: http.StatusConflict, Code: apitypes.CodeConflict, Message: err.Error(), Details: d}
	case errors.Is(err, record.ErrConflict), errors.Is(err, record.ErrDuplicate),
		errors.Is(err, gitstore.ErrRefConflict), errors.Is(err, gitstore.ErrRefLocked):
		return newError(http.StatusConflict, apitypes.CodeConflict, "%s", err.Error())
	case errors.Is(err, session.ErrReadOnly), errors.Is(err, record.ErrForbidden):
		return newError(http.StatusForbidden, apitypes.CodeForbidden, "%s", err.Error())
	case errors.Is(err, record.ErrNotFound), errors.Is(err, gitstore.ErrNotFound):
		return newError(http.StatusNotFound, apitypes.CodeNotFound, "%s", err.Error())
	case errors.Is(err, record.ErrInvalid), errors.Is(err, overlay.ErrIsDir), errors.Is(err, overlay.ErrNotDir),
		errors.Is(err, gitstore.ErrInvalidOID), errors.Is(err, gitstore.ErrAmbiguous), errors.Is(err, gitstore.ErrInvalidRef):
		return newError(http.StatusBadRequest, apitypes.CodeBadRequest, "%s", err.Error())
	case errors.Is(err, gitstore.ErrInvalidMode):
		return &apitypes.Error{Status: http.StatusBadRequest, Code: apitypes.CodeInvalidPath, Message: err.Error(),
			Details: map[string]any{"rule": string(overlay.RuleBadFilemode)}}
	case errors.Is(err, record.ErrUnavailable), errors.Is(err, session.ErrNoWorkdir), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable, "%s", err.Error())
	}
	return newError(http.StatusInternalServerError, apitypes.CodeInternal, "internal error")
}
