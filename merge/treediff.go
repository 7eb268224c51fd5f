package merge

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Status is what happened to one file between two trees.
type Status string

// The statuses of a FileChange.
const (
	StatusAdded       Status = "added"
	StatusModified    Status = "modified"
	StatusDeleted     Status = "deleted"
	StatusModeChanged Status = "mode_changed" // same content, new mode
	StatusTypeChanged Status = "type_changed" // e.g. a file became a symlink
	StatusRenamed     Status = "renamed"
	StatusCopied      Status = "copied"
)

// FileChange is one file's change between two trees. For an added file
// OldPath is empty and the old id and mode are zero; for a deleted one the
// same holds for NewPath and the new side.
type FileChange struct {
	Status     Status
	OldPath    string
	NewPath    string
	OldMode    gitstore.Mode
	NewMode    gitstore.Mode
	OldOID     gitstore.OID
	NewOID     gitstore.OID
	Similarity int // percent, for renames and copies
}

// Path is the path the change is best known by: the new path, or the old
// one for a deletion.
func (c *FileChange) Path() string {
	if c.NewPath != "" {
		return c.NewPath
	}
	return c.OldPath
}

// From is the old side as a tree entry: the zero Entry for an addition.
func (c *FileChange) From() gitstore.Entry {
	return gitstore.Entry{Path: c.OldPath, Mode: c.OldMode, OID: c.OldOID}
}

// To is the new side as a tree entry: the zero Entry for a deletion.
func (c *FileChange) To() gitstore.Entry {
	return gitstore.Entry{Path: c.NewPath, Mode: c.NewMode, OID: c.NewOID}
}

// DiffOptions tune DiffTrees.
type DiffOptions struct {
	// NoRenames turns rename detection off; by default renames are found
	// as git diff does: exact ones by id, then by content similarity.
	NoRenames bool
	// RenameScore is the similarity threshold in percent; 0 means git's
	// default of 50.
	RenameScore int
	// RenameLimit caps sources × destinations for inexact detection;
	// 0 means git's diff.renameLimit default of 1,000 (squared).
	RenameLimit int
	// Copies also looks for copies from files modified in the same diff
	// (git diff -C).
	Copies bool
}

// DiffTrees returns the files that differ between trees oldTree and
// newTree (either may be ZeroOID for an empty tree), in path order. It
// descends only into subtrees whose ids differ, so its cost is
// proportional to what changed, not to the size of the trees.
//
// The session engine diffs a base against an overlay by first building
// the overlay's tree (gitstore's builder re-encodes only the changed
// directories) and diffing the two trees.
func DiffTrees(ctx context.Context, repo *gitstore.Repo, oldTree, newTree gitstore.OID, opts DiffOptions) ([]FileChange, error) {
	var changes []FileChange
	if err := walkDiff(ctx, repo, oldTree, newTree, "", func(c FileChange) error { changes = append(changes, c); return nil }); err != nil {
		return nil, err
	}
	if !opts.NoRenames {
		var err error
		changes, err = detectRenames(ctx, repo, changes, renameParams{
			minScore:    scoreFromPercent(opts.RenameScore),
			limit:       cmp.Or(opts.RenameLimit, 1000),
			renameEmpty: true,
			copies:      opts.Copies,
		})
		if err != nil {
			return nil, err
		}
	}
	sortChanges(changes)
	return changes, nil
}

func sortChanges(changes []FileChange) {
	slices.SortStableFunc(changes, func(a, b FileChange) int {
		return strings.Compare(a.Path(), b.Path())
	})
}

// entryOrder compares tree entries in git order: a directory sorts as if
// its name ended in '/'.
func entryOrder(a, b gitstore.TreeEntry) int {
	an, bn := a.Name, b.Name
	if a.Mode.IsDir() {
		an += "/"
	}
	if b.Mode.IsDir() {
		bn += "/"
	}
	return strings.Compare(an, bn)
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func loadEntries(ctx context.Context, repo *gitstore.Repo, id gitstore.OID) ([]gitstore.TreeEntry, error) {
	if id.IsZero() {
		return nil, nil
	}
	t, err := repo.Tree(ctx, id)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

// WalkChanges calls fn for every file (blob or gitlink) that differs
// between trees a and b (ZeroOID is the empty tree), in git order, as git
// diff-tree -r --no-renames lists them: no rename detection, a path whose
// type changes between file and directory a deletion of the one and
// additions of the other. Subtrees with equal ids are skipped unread, so
// the cost follows what changed. fn's error stops the walk and is
// returned. DiffTrees is this walk with rename detection.
func WalkChanges(ctx context.Context, repo *gitstore.Repo, a, b gitstore.OID, fn func(FileChange) error) error {
	return walkDiff(ctx, repo, a, b, "", fn)
}

// walkDiff reports file-level changes between trees a and b under dir.
// A path that is a file on one side and a directory on the other is a
// deletion plus additions, as in git diff-tree -r.
func walkDiff(ctx context.Context, repo *gitstore.Repo, a, b gitstore.OID, dir string, fn func(FileChange) error) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ea, err := loadEntries(ctx, repo, a)
	if err != nil {
		return fmt.Errorf("diff %q: %w", dir, err)
	}
	eb, err := loadEntries(ctx, repo, b)
	if err != nil {
		return fmt.Errorf("diff %q: %w", dir, err)
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var c int
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = entryOrder(ea[i], eb[j])
		}
		switch {
		case c < 0:
			if err := reportSide(ctx, repo, ea[i], dir, true, fn); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := reportSide(ctx, repo, eb[j], dir, false, fn); err != nil {
				return err
			}
			j++
		default:
			x, y := ea[i], eb[j]
			i++
			j++
			if x.Mode == y.Mode && x.OID == y.OID {
				continue
			}
			p := joinPath(dir, x.Name)
			if x.Mode.IsDir() {
				if err := walkDiff(ctx, repo, x.OID, y.OID, p, fn); err != nil {
					return err
				}
				continue
			}
			if err := fn(PathChange(p, x.Mode, x.OID, y.Mode, y.OID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// PathChange is file p's change from (oldMode, oldID) to (newMode, newID),
// with the status DiffTrees gives it: added when there is no old side (a
// zero mode), deleted when there is no new one, else modified, or
// mode_changed for the same content, or type_changed when the file
// became another kind (a symlink, a gitlink).
func PathChange(p string, oldMode gitstore.Mode, oldID gitstore.OID, newMode gitstore.Mode, newID gitstore.OID) FileChange {
	switch {
	case oldMode == 0:
		return FileChange{Status: StatusAdded, NewPath: p, NewMode: newMode, NewOID: newID}
	case newMode == 0:
		return FileChange{Status: StatusDeleted, OldPath: p, OldMode: oldMode, OldOID: oldID}
	}
	st := StatusModified
	switch {
	case oldID == newID:
		st = StatusModeChanged
	case fileType(oldMode) != fileType(newMode):
		st = StatusTypeChanged
	}
	return FileChange{Status: st, OldPath: p, NewPath: p, OldMode: oldMode, NewMode: newMode, OldOID: oldID, NewOID: newID}
}

// fileType is the kind of a blob mode: regular, symlink or gitlink.
func fileType(m gitstore.Mode) gitstore.Mode {
	if m == gitstore.ModeExec {
		return gitstore.ModeFile
	}
	return m
}

// reportSide reports every file at or below entry e as deleted (old) or
// added.
func reportSide(ctx context.Context, repo *gitstore.Repo, e gitstore.TreeEntry, dir string, old bool, fn func(FileChange) error) error {
	p := joinPath(dir, e.Name)
	one := func(p string, m gitstore.Mode, id gitstore.OID) error {
		if old {
			return fn(FileChange{Status: StatusDeleted, OldPath: p, OldMode: m, OldOID: id})
		}
		return fn(FileChange{Status: StatusAdded, NewPath: p, NewMode: m, NewOID: id})
	}
	if !e.Mode.IsDir() {
		return one(p, e.Mode, e.OID)
	}
	return repo.List(ctx, e.OID, "", true, func(x gitstore.Entry) error {
		if !x.Mode.IsDir() {
			return one(path.Join(p, x.Path), x.Mode, x.OID)
		}
		return nil
	})
}
