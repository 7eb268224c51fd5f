package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// Conflicts a session keeps (SPEC §14): a rebase or merge with
// ConflictsKeep applies every clean change and leaves each conflicted
// path as git leaves it (diff3 markers with the base's section, a
// modified file the other side deleted, files moved aside), and records
// the structured conflicts. A conflict is resolved when its path no
// longer holds the markers sessiond wrote (for kinds without text: when
// what sessiond wrote there was rewritten or deleted), or by Resolve.
// Unresolved conflicts block submit, accept and another rebase or merge;
// a checkpoint records the files as they are and resolves nothing.
// Resolutions of text conflicts are remembered per repository under git
// rerere's id, offered by Conflicts and applied by ConflictsReuse.

// ConflictsMode says what a rebase or merge does when it conflicts.
type ConflictsMode string

// The modes: refuse (a *merge.ConflictError, nothing applied), keep, and
// keep reusing remembered resolutions.
const (
	ConflictsRefuse ConflictsMode = ""
	ConflictsKeep   ConflictsMode = "keep"
	ConflictsReuse  ConflictsMode = "reuse"
)

// ParseConflictsMode reads a request's "conflicts" field.
func ParseConflictsMode(s string) (ConflictsMode, error) {
	switch ConflictsMode(s) {
	case ConflictsRefuse, ConflictsKeep, ConflictsReuse:
		return ConflictsMode(s), nil
	case "refuse":
		return ConflictsRefuse, nil
	}
	return "", fmt.Errorf("%w: conflicts %q: want keep, reuse or refuse", record.ErrInvalid, s)
}

// KeptConflict is an unresolved conflict of a session: the structured
// conflict and what sessiond wrote for it.
type KeptConflict struct {
	merge.Conflict
	// Op is the operation that left it: rebase or merge.
	Op Op `json:"op"`
	// Written is what sessiond left at the conflict's path and its git
	// paths (a zero OID: nothing).
	Written []WrittenFile `json:"written"`
	// Markers are the labelled marker lines sessiond wrote ("<<<<<<< …",
	// "||||||| …", ">>>>>>> …"); empty for kinds without text.
	Markers []string `json:"markers,omitempty"`
	// Rerere is git rerere's id of the conflict and Preimage its
	// normalized form; empty for kinds without text.
	Rerere   string `json:"rerere,omitempty"`
	Preimage []byte `json:"preimage,omitempty"`
	// Offered is a remembered resolution of the same conflict replayed on
	// the file as it is now (Conflicts fills it; never stored).
	Offered []byte `json:"-"`
}

// WrittenFile is a file sessiond put at a conflicted path.
type WrittenFile struct {
	Path string        `json:"path"`
	OID  gitstore.OID  `json:"oid"`
	Mode gitstore.Mode `json:"mode"`
}

// Resolution is a remembered resolution: git rerere's preimage and
// postimage of a conflict, per repository.
type Resolution struct {
	Repo, ID            string
	Preimage, Postimage []byte
	CreatedAt           time.Time
}

// ErrUnresolvedConflicts: the session has conflicts it has not resolved
// (API unresolved_conflicts). The error is an *UnresolvedError.
var ErrUnresolvedConflicts = errors.New("unresolved conflicts")

// UnresolvedError lists a session's unresolved conflicts that stopped
// an operation.
type UnresolvedError struct {
	Session   uuid.UUID
	What      string
	Conflicts []KeptConflict
}

func (e *UnresolvedError) Error() string {
	paths := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		paths[i] = c.Path
	}
	return fmt.Sprintf("%s: session %s has %d unresolved conflicts (%s); resolve them (remove the markers, or POST .../resolve) first",
		e.What, e.Session, len(e.Conflicts), strings.Join(paths, ", "))
}

// Unwrap makes errors.Is(err, ErrUnresolvedConflicts) hold.
func (e *UnresolvedError) Unwrap() error { return ErrUnresolvedConflicts }

// StageEntry is a conflicted path of the view's index: its stages 1
// (base), 2 (ours) and 3 (theirs), nil where that side has no file.
type StageEntry struct {
	Path               string
	Base, Ours, Theirs *merge.Version
}

// markerLines returns the labelled conflict marker lines of content.
func markerLines(content []byte) []string {
	var out []string
	for _, l := range bytes.SplitAfter(content, []byte("\n")) {
		s := strings.TrimRight(string(l), "\r\n")
		if len(s) > 8 && s[7] == ' ' && (strings.HasPrefix(s, "<<<<<<<") || strings.HasPrefix(s, "|||||||") || strings.HasPrefix(s, ">>>>>>>")) {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// hasMarker reports whether content still has a line of markers.
func hasMarker(content []byte, markers []string) bool {
	for _, l := range bytes.SplitAfter(content, []byte("\n")) {
		if slices.Contains(markers, strings.TrimRight(string(l), "\r\n")) {
			return true
		}
	}
	return false
}

// keepConflicts turns a kept merge's conflicts into the session's record;
// with reuse, conflicts a remembered resolution resolves cleanly are
// resolved in the tree instead, and the tree returned holds them.
func (m *Manager) keepConflicts(ctx context.Context, ls *live, op Op, res *merge.MergeResult, mode ConflictsMode) (gitstore.OID, []KeptConflict, []string, error) {
	var kept []KeptConflict
	var changes []gitstore.Change
	var reused []string
	b := ls.repo.NewBatch()
	for _, c := range res.Conflicts {
		k := KeptConflict{Conflict: c, Op: op}
		for _, p := range append([]string{c.Path}, c.GitPaths...) {
			e, err := ls.repo.Lookup(ctx, res.Tree, p)
			switch {
			case errors.Is(err, gitstore.ErrNotFound):
				k.Written = append(k.Written, WrittenFile{Path: p})
			case err != nil:
				return gitstore.ZeroOID, nil, nil, err
			case !e.Mode.IsDir():
				k.Written = append(k.Written, WrittenFile{Path: p, OID: e.OID, Mode: e.Mode})
			}
		}
		if c.Rendered != nil {
			k.Markers = markerLines(c.Rendered)
			if id, pre, ok := merge.RerereKey(c.Rendered, 0); ok {
				k.Rerere, k.Preimage = id, pre
			}
		}
		if mode == ConflictsReuse && k.Rerere != "" {
			r, err := m.store.GetResolution(ctx, ls.meta.Repo, k.Rerere)
			if err != nil && !errors.Is(err, record.ErrNotFound) {
				return gitstore.ZeroOID, nil, nil, err
			}
			if err == nil {
				if out, ok := merge.RerereReplay(c.Rendered, r.Preimage, r.Postimage, 0); ok {
					mode := gitstore.ModeFile
					if c.Ours != nil {
						mode = c.Ours.Mode
					}
					if len(k.Written) > 0 && !k.Written[0].OID.IsZero() {
						mode = k.Written[0].Mode
					}
					changes = append(changes, gitstore.Change{Path: c.Path, Mode: mode, OID: b.AddBlob(out)})
					reused = append(reused, c.Path)
					continue
				}
			}
		}
		kept = append(kept, k)
	}
	tree := res.Tree
	if len(changes) > 0 {
		var err error
		if tree, err = b.BuildTree(ctx, res.Tree, changes); err != nil {
			return gitstore.ZeroOID, nil, nil, err
		}
		if err := b.Flush(ctx); err != nil {
			return gitstore.ZeroOID, nil, nil, err
		}
	}
	return tree, kept, reused, nil
}

// refreshConflicts returns the session's unresolved conflicts, first
// dropping those its view resolved (markers gone, or what sessiond wrote
// rewritten or deleted) and remembering the resolutions of text
// conflicts. ls.mu must be held.
func (m *Manager) refreshConflicts(ctx context.Context, ls *live) ([]KeptConflict, error) {
	return m.dropResolved(ctx, ls, true)
}

// dropResolved drops the conflicts ls's view resolved; with remember, the
// resolutions of text conflicts are remembered (not after a rollback,
// which did not resolve anything: it took the files back).
func (m *Manager) dropResolved(ctx context.Context, ls *live, remember bool) ([]KeptConflict, error) {
	cs, err := m.store.ListConflicts(ctx, ls.meta.ID)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	var open []KeptConflict
	var resolved []string
	var remembered []Resolution
	now := m.now()
	for _, c := range cs {
		done, post, err := m.resolvedInView(ctx, ls, c)
		if err != nil {
			return nil, err
		}
		if !done {
			open = append(open, c)
			continue
		}
		resolved = append(resolved, c.Path)
		if remember && post != nil && c.Rerere != "" {
			remembered = append(remembered, Resolution{Repo: ls.meta.Repo, ID: c.Rerere, Preimage: c.Preimage, Postimage: post, CreatedAt: now})
		}
	}
	if len(resolved) > 0 {
		err := m.store.InTx(ctx, func(tx Tx) error {
			if err := tx.DeleteConflicts(ctx, ls.meta.ID, resolved); err != nil {
				return err
			}
			for _, r := range remembered {
				if err := tx.PutResolution(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("record resolved conflicts: %w", err)
		}
	}
	return open, nil
}

// resolvedInView reports whether the view resolved conflict c, and for a
// text conflict resolved by editing, the resolved content.
func (m *Manager) resolvedInView(ctx context.Context, ls *live, c KeptConflict) (bool, []byte, error) {
	cur := func(p string) (gitstore.Entry, bool, error) {
		e, err := ls.repo.Lookup(ctx, ls.tree, p)
		if errors.Is(err, gitstore.ErrNotFound) || err == nil && e.Mode.IsDir() {
			return gitstore.Entry{}, false, nil
		}
		return e, err == nil, err
	}
	if len(c.Markers) > 0 {
		e, ok, err := cur(c.Path)
		if err != nil || !ok {
			return !ok && err == nil, nil, err
		}
		data, err := ls.repo.ReadBlob(ctx, e.OID)
		if err != nil {
			return false, nil, err
		}
		if hasMarker(data, c.Markers) {
			return false, nil, nil
		}
		return true, data, nil
	}
	for _, w := range c.Written {
		e, ok, err := cur(w.Path)
		if err != nil {
			return false, nil, err
		}
		if ok != !w.OID.IsZero() || ok && (e.OID != w.OID || e.Mode != w.Mode) {
			return true, nil, nil
		}
	}
	return false, nil, nil
}

// Conflicts returns session id's unresolved conflicts, each with a
// remembered resolution of the same conflict replayed on the file as it
// is now (Offered) when the repository has one that applies.
func (m *Manager) Conflicts(ctx context.Context, id uuid.UUID) ([]KeptConflict, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer ls.unlock()
	cs, err := m.refreshConflicts(ctx, ls)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		c := &cs[i]
		if c.Rerere == "" {
			continue
		}
		r, err := m.store.GetResolution(ctx, ls.meta.Repo, c.Rerere)
		if errors.Is(err, record.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e, err := ls.repo.Lookup(ctx, ls.tree, c.Path)
		if err != nil {
			continue
		}
		data, err := ls.repo.ReadBlob(ctx, e.OID)
		if err != nil {
			return nil, err
		}
		if out, ok := merge.RerereReplay(data, r.Preimage, r.Postimage, 0); ok {
			c.Offered = out
		}
	}
	return visibleConflicts(ls, cs), nil
}

// visibleConflicts keeps the conflicts whose path the session may read.
func visibleConflicts(ls *live, cs []KeptConflict) []KeptConflict {
	out := cs[:0:0]
	for _, c := range cs {
		if ls.policy.canRead(c.Path) {
			out = append(out, c)
		}
	}
	return out
}

// Resolve marks session id's conflicts at paths resolved as their files
// are now (a text conflict whose markers are gone is remembered, as
// when the view resolves it by itself). A path with no unresolved
// conflict is record.ErrInvalid and nothing changes. It returns what
// remains.
func (m *Manager) Resolve(ctx context.Context, id uuid.UUID, paths []string) ([]KeptConflict, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: resolve: name at least one path", record.ErrInvalid)
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer ls.unlock()
	if err := m.recorder.checkWritable(ctx, ls); err != nil {
		return nil, err
	}
	cs, err := m.refreshConflicts(ctx, ls)
	if err != nil {
		return nil, err
	}
	var rest []KeptConflict
	for _, c := range cs {
		if !slices.Contains(paths, c.Path) {
			rest = append(rest, c)
		}
	}
	for _, p := range paths {
		if !slices.ContainsFunc(cs, func(c KeptConflict) bool { return c.Path == p }) || !ls.policy.canRead(p) {
			return nil, fmt.Errorf("%w: resolve %q: the session has no unresolved conflict there", record.ErrInvalid, p)
		}
	}
	if err := m.store.DeleteConflicts(ctx, ls.meta.ID, paths); err != nil {
		return nil, err
	}
	return visibleConflicts(ls, rest), nil
}

// CheckResolved fails with an *UnresolvedError when session id has
// unresolved conflicts; what names the operation they stop.
func (m *Manager) CheckResolved(ctx context.Context, id uuid.UUID, what string) error {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return err
	}
	defer ls.unlock()
	return m.checkResolved(ctx, ls, what)
}

func (m *Manager) checkResolved(ctx context.Context, ls *live, what string) error {
	cs, err := m.refreshConflicts(ctx, ls)
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		return &UnresolvedError{Session: ls.meta.ID, What: what, Conflicts: visibleConflicts(ls, cs)}
	}
	return nil
}

// ConflictStages returns the index stages of session id's unresolved
// conflicts, for the view's .git index: stage 1 (base), 2 (ours: the
// side the session moved onto, as in git rebase; this session in a
// merge) and 3 (theirs) at each path git records the conflict at, by
// path.
func (m *Manager) ConflictStages(ctx context.Context, id uuid.UUID) ([]StageEntry, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer ls.unlock()
	return m.conflictStages(ctx, ls)
}

// conflictStages is ConflictStages for a session whose lock is held.
func (m *Manager) conflictStages(ctx context.Context, ls *live) ([]StageEntry, error) {
	cs, err := m.refreshConflicts(ctx, ls)
	if err != nil {
		return nil, err
	}
	var out []StageEntry
	for _, c := range visibleConflicts(ls, cs) {
		switch {
		case c.Kind == merge.ConflictDirRenameSplit, c.Kind == merge.ConflictDirRenameCollision:
			// about directories: git records no file
		case len(c.GitPaths) == 2: // distinct types: each side at its place
			out = append(out, StageEntry{Path: c.GitPaths[0], Ours: c.Ours}, StageEntry{Path: c.GitPaths[1], Theirs: c.Theirs})
		case len(c.GitPaths) == 1:
			out = append(out, StageEntry{Path: c.GitPaths[0], Base: c.Base, Ours: c.Ours, Theirs: c.Theirs})
		default:
			out = append(out, StageEntry{Path: c.Path, Base: c.Base, Ours: c.Ours, Theirs: c.Theirs})
		}
	}
	slices.SortFunc(out, func(a, b StageEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
