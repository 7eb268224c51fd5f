package workdir

import "errors"

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrUnsupported: the kernel or platform refuses what the mode needs
	// (overlayfs, user or mount namespaces).
	ErrUnsupported = errors.New("not supported here")
	// ErrInvalid: a command the runner cannot start as given (an empty
	// argv, a working directory outside the view).
	ErrInvalid = errors.New("invalid command")
	// ErrHelper: the helper that sets up the command's namespaces failed
	// before the command started.
	ErrHelper = errors.New("command setup failed")
	// ErrViewHeld: the session's running services hold its view on a
	// base (and environment layer) other than the one asked for.
	ErrViewHeld = errors.New("the session's running services hold its view")
)
