package gitstore

import "errors"

// Sentinel errors. Callers test them with errors.Is; messages add context.
var (
	// ErrNotFound: no object, ref, revision or path by that name.
	ErrNotFound = errors.New("not found")
	// ErrInvalidOID: text that is not an object id.
	ErrInvalidOID = errors.New("invalid object id")
	// ErrInvalidMode: a mode git does not allow in a tree.
	ErrInvalidMode = errors.New("invalid mode")
	// ErrAmbiguous: a short id or revision that names more than one object.
	ErrAmbiguous = errors.New("ambiguous revision")
	// ErrWrongKind: an object of another kind than the caller asked for.
	ErrWrongKind = errors.New("wrong object kind")
	// ErrRefConflict: a compare-and-swap found the ref at another value.
	ErrRefConflict = errors.New("ref changed concurrently")
	// ErrRefLocked: another writer (sessiond or git) holds the ref's lock file.
	ErrRefLocked = errors.New("ref is locked")
	// ErrInvalidRef: a ref name git would refuse (check-ref-format).
	ErrInvalidRef = errors.New("invalid ref name")
	// ErrCollision: a tree change that writes below a file, or a file over a
	// directory that still has changes below it.
	ErrCollision = errors.New("file/directory collision")
	// ErrCorrupt: an object that does not decode.
	ErrCorrupt = errors.New("corrupt object")
	// ErrNotRepository: a path that is not a git repository.
	ErrNotRepository = errors.New("not a git repository")
)
