package apitypes

import "encoding/json"

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
	// CodeChecksRequired: accept refused because a check the repository's
	// policy requires is missing, failed or stale (details: checks).
	CodeChecksRequired = "checks_required"
	// CodeUnresolvedConflicts: a 409 for a session whose kept conflicts
	// are not resolved (details: conflicts), refusing submit, accept and
	// another rebase or merge.
	CodeUnresolvedConflicts = "unresolved_conflicts"
	// CodeInsufficientStorage is a 507: a write failed for lack of space
	// where it writes, named in "filled" ("store", "objects" or "refs")
	// and "repo"; nothing of it was acknowledged, and it succeeds again
	// once space is freed.
	CodeInsufficientStorage = "insufficient_storage"
	CodeMethodNotAllowed    = "method_not_allowed"
	// CodeRangeNotSatisfiable is a 416: a Range that no part of the file
	// satisfies; Content-Range carries the size.
	CodeRangeNotSatisfiable = "range_not_satisfiable"
	// CodeUnsupportedMediaType is a 415: a POST body that is not
	// Content-Type: application/json (or a Content-Encoding other than
	// gzip).
	CodeUnsupportedMediaType = "unsupported_media_type"
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

// UnmarshalJSON reads code and message and keeps every other field in
// Details. Status is not in the body: the HTTP status sets it.
func (e *Error) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	e.Code, _ = m["code"].(string)
	e.Message, _ = m["message"].(string)
	delete(m, "code")
	delete(m, "message")
	e.Details = m
	return nil
}

// ErrorBody is the JSON shape of every error response.
type ErrorBody struct {
	Error *Error `json:"error"`
}
