package mcpserver

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sessiond/sessiond/client"
)

// Codes of the errors this package finds itself; the rest are the API's
// (bad_request, invalid_path, forbidden, not_found, precondition_failed,
// too_large, conflict, session_closed, unavailable, insufficient_storage,
// internal).
const (
	CodeNoMatch        = "no_match"        // an edit's old_text is not in the file
	CodeAmbiguousMatch = "ambiguous_match" // an edit's old_text is in the file more than once
	CodeBadRequest     = "bad_request"
	CodeUnavailable    = "unavailable"
	CodeInternal       = "internal"
)

// Error is a tool error: a stable code, a message for the model, and
// details for programs (the API's rule, path, current version, …).
type Error struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error { return newError(CodeBadRequest, format, args...) }

// toolError turns any error into the tool error the model sees: an API
// error keeps its code, message and details; anything else (the daemon
// unreachable, a broken answer) is unavailable or internal.
func toolError(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		return &Error{Code: ae.Code, Message: ae.Message, Details: ae.Details}
	}
	if strings.Contains(err.Error(), "connection refused") || errors.Is(err, errors.ErrUnsupported) {
		return newError(CodeUnavailable, "%v", err)
	}
	return newError(CodeInternal, "%v", err)
}

// text is the error as a model reads it: the code and message, then each
// detail on its own line, then a hint where one helps.
func (e *Error) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Error %s: %s", e.Code, e.Message)
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := e.Details[k].(string); ok && v != "" {
			fmt.Fprintf(&b, "\n%s: %s", k, v)
		}
	}
	if h := hints[e.Code]; h != "" {
		b.WriteString("\n" + h)
	}
	return b.String()
}

// structured is the error as structured content: {"error": {code,
// message, …details}}, the API's shape.
func (e *Error) structured() map[string]any {
	m := map[string]any{}
	for k, v := range e.Details {
		m[k] = v
	}
	m["code"], m["message"] = e.Code, e.Message
	return map[string]any{"error": m}
}

var hints = map[string]string{
	"precondition_failed": "The file changed since you read it: read it again (read_file) and retry with the new ETag.",
	"invalid_path":        "Paths are relative to the repository root, with / between names and no . or .. parts.",
	"not_found":           "Check the name: list_dir and glob list the session's paths, status lists the checkpoints.",
	"session_busy":        "A command is running on this session; retry when it has finished.",
}
