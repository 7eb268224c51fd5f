package gitstore

import (
	"errors"
	"fmt"
)

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
	// ErrMissingObject: an object that a tree, commit, tag, ref or row names
	// is not in the repository. Distinct from ErrNotFound: it is damage,
	// not an absent path; it comes inside an *ObjectError.
	ErrMissingObject = errors.New("missing from the repository")
	// ErrNotRepository: a path that is not a git repository.
	ErrNotRepository = errors.New("not a git repository")
)

// ObjectError is a missing (ErrMissingObject) or corrupt (ErrCorrupt)
// object: the repository is damaged, whatever path led to the object.
type ObjectError struct {
	ID  OID
	Err error // ErrMissingObject or ErrCorrupt, possibly wrapped
}

func (e *ObjectError) Error() string { return "object " + e.ID.String() + ": " + e.Err.Error() }

func (e *ObjectError) Unwrap() error { return e.Err }

func missingObject(id OID) error { return &ObjectError{ID: id, Err: ErrMissingObject} }

func corruptObject(id OID, why string) error {
	return &ObjectError{ID: id, Err: fmt.Errorf("%w: %s", ErrCorrupt, why)}
}
