package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/workdir"
)

// live is a session loaded in memory: its metadata, its overlay and the
// tree of its current view.
type live struct {
	id  uuid.UUID
	mem *memory // whose entry it is; unlock reports there
	// mu serializes every operation on the session and guards all fields
	// below. A read holds it only to take a snapshot (view, files.go):
	// the overlay it publishes is frozen. Waiting for it honours the
	// caller's context; see sessionLock.
	mu sessionLock

	// dead: unloaded (dropped from Manager.live); whoever waited for mu
	// looks the session up again. used: when an operation last released
	// mu, for the idle unloader.
	dead bool
	used time.Time

	loaded   bool
	meta     Session
	repo     *gitstore.Repo
	baseTree gitstore.OID
	policy   *policy
	ttl      time.Duration // idle TTL; zero: none

	ov *overlay.Overlay
	// tree is the merged view's tree. pinned is what refs/sessions/<id>/live
	// holds (zero when absent); after each mutation both are the same, so
	// `git gc` never prunes a blob the overlay references.
	tree   gitstore.OID
	pinned gitstore.OID

	// reads is the read set (readset.go; it has its own mutex): the
	// next transaction of the session saves what the store lacks.
	reads *readSet

	// busy is set while a command runs on the session's view: writes are
	// refused (ErrBusy) so the view the command started from stays the
	// record until its changes are captured.
	busy bool
	// serving counts the session's running services (service.go): the
	// session is not unloaded while any runs.
	serving int
}

// lockLive returns the loaded session id with its lock held, loading it
// from the store if it is not in memory. It gives up when ctx ends while
// it waits for the lock.
func (m *Manager) lockLive(ctx context.Context, id uuid.UUID) (*live, error) {
	ls, err := m.mem.lockEntry(ctx, id)
	if err != nil {
		return nil, err
	}
	if ls.loaded {
		return ls, nil
	}
	if err := m.mem.load(ctx, id, ls); err != nil {
		ls.unlock() // drops the entry: nothing is loaded
		return nil, err
	}
	return ls, nil
}

// load reads a session from the store, rebuilds its overlay and tree, and
// repairs its refs after a crash: the store is the truth, refs follow it.
func (m *memory) load(ctx context.Context, id uuid.UUID, ls *live) error {
	m.loads.Add(1)
	s, stored, err := m.readSession(ctx, id)
	if err != nil {
		return err
	}
	if c, ok := m.store.(claimer); ok && !s.State.Terminal() {
		// A cluster's node holds in memory only the sessions it owns,
		// so it never serves a copy another node goes on changing; read
		// again as the owner (the old owner writes nothing more).
		if err := c.Claim(ctx, id); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		if s, stored, err = m.readSession(ctx, id); err != nil {
			return err
		}
	}
	r, err := m.repos.Open(ctx, s.Repo)
	if err != nil {
		return err
	}
	if m.objects != nil {
		// Another node may have written the session: what it names comes
		// from the cluster's store (and its base from the origin).
		ids := make([]gitstore.OID, 0, len(stored)+2)
		ids = append(ids, s.BaseCommit)
		if s.Checkpoints > 0 {
			ids = append(ids, s.Head)
		}
		for _, e := range stored {
			ids = append(ids, e.Blob)
		}
		if err := m.objects.Fill(ctx, s.Repo, r, ids); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		// Its base kept from gc here too (its live and head refs are
		// set below).
		if !s.State.Terminal() {
			if b, err := r.ReadRef(ctx, baseRef(id)); errors.Is(err, gitstore.ErrNotFound) || (err == nil && b != s.BaseCommit) {
				if err := setRef(ctx, r, baseRef(id), s.BaseCommit); err != nil {
					return fmt.Errorf("session %s: %w", id, err)
				}
			}
		}
	}
	c, err := r.Commit(ctx, s.BaseCommit)
	if err != nil {
		return fmt.Errorf("session %s: base commit: %w", id, err)
	}
	pol, err := compilePolicy(s.Policy)
	if err != nil {
		return err
	}
	base := r.View(c.Tree)
	entries := make([]overlay.Entry, len(stored))
	for i, e := range stored {
		entries[i] = fromStoreEntry(e)
		if e.Status != StatusDeleted {
			if size, err := r.BlobSize(ctx, e.Blob); err == nil {
				entries[i].Size = size
			}
		}
	}
	ov, err := overlay.Restore(base, m.ovOpts, entries)
	if err != nil {
		return fmt.Errorf("session %s: restore overlay: %w", id, err)
	}
	// The tree is computed without writing: when the live ref already
	// names it, its objects are durable and loading writes nothing.
	rebuilt := r.NewBatch()
	tree, err := ov.BuildTree(ctx, rebuilt, c.Tree)
	if err != nil {
		return fmt.Errorf("session %s: rebuild tree: %w", id, err)
	}
	// Only the engine writes a session's refs, and a session is loaded
	// once per process: a lock there now was left by a crash.
	if _, err := r.RemoveStaleLocks(sessionRefs(id)); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	pinned, err := r.ReadRef(ctx, liveRef(id))
	if err != nil && !errors.Is(err, gitstore.ErrNotFound) {
		return err
	}
	// A session with no changes needs no live ref (its base ref pins the
	// base tree), so a request that changes nothing creates none.
	if !s.State.Terminal() && pinned != tree && !(pinned.IsZero() && tree == c.Tree) {
		if err := rebuilt.Flush(ctx); err != nil {
			return fmt.Errorf("session %s: rebuild tree: %w", id, err)
		}
		if err := setRef(ctx, r, liveRef(id), tree); err != nil {
			return fmt.Errorf("session %s: pin overlay: %w", id, err)
		}
		pinned = tree
	}
	// The head ref follows the store's head (a crash may have moved the
	// ref without the row).
	if s.Checkpoints > 0 {
		if err := setRef(ctx, r, headRef(id), s.Head); err != nil {
			return err
		}
	}
	// Field by field: ls.mu is held and must not be overwritten.
	ls.loaded, ls.meta, ls.repo, ls.baseTree, ls.policy = true, s, r, c.Tree, pol
	reads, err := m.store.ListReads(ctx, id)
	if err != nil {
		return fmt.Errorf("session %s: read set: %w", id, err)
	}
	ls.ov, ls.tree, ls.pinned, ls.reads = ov.Freeze(), tree, pinned, newReadSet(reads)
	ls.ttl = 0
	if !s.ExpiresAt.IsZero() && !s.LastActiveAt.IsZero() {
		ls.ttl = s.ExpiresAt.Sub(s.LastActiveAt)
	}
	return nil
}

// readSession reads a session's row and overlay as of one sequence number.
// They are two reads, and a commit may land between them: a process killed
// after sending its COMMIT leaves the database to finish it a moment later.
// Every overlay change advances the sequence, so an unchanged sequence
// around the overlay read means the two agree.
func (m *memory) readSession(ctx context.Context, id uuid.UUID) (Session, []OverlayEntry, error) {
	for attempt := 0; ; attempt++ {
		s, err := m.store.GetSession(ctx, id)
		if err != nil {
			return Session{}, nil, err // the store's error names the session
		}
		stored, err := m.store.ListOverlay(ctx, id)
		if err != nil {
			return Session{}, nil, fmt.Errorf("session %s: overlay: %w", id, err)
		}
		again, err := m.store.GetSession(ctx, id)
		if err != nil {
			return Session{}, nil, err
		}
		if again.Seq == s.Seq {
			return s, stored, nil
		}
		if attempt == 10 {
			return Session{}, nil, fmt.Errorf("session %s: changing while it loads (sequence %d, then %d)", id, s.Seq, again.Seq)
		}
	}
}

// claimer is what a cluster's store adds (internal/clustersession): the
// take of a session's ownership by this node, or record.ErrUnavailable
// naming the live node that owns it.
type claimer interface {
	Claim(ctx context.Context, id uuid.UUID) error
}

// Claim makes this node the owner of session id before a change of it
// another engine makes (an accept pushes before it records): in a
// cluster, record.ErrUnavailable naming the live node that owns it; on
// one daemon, nothing.
func (m *Manager) Claim(ctx context.Context, id uuid.UUID) error {
	if c, ok := m.store.(claimer); ok {
		return c.Claim(ctx, id)
	}
	return nil
}

func fromStoreEntry(e OverlayEntry) overlay.Entry {
	st := overlay.Added
	switch e.Status {
	case StatusModified:
		st = overlay.Modified
	case StatusDeleted:
		st = overlay.Deleted
	}
	return overlay.Entry{Path: e.Path, Status: st, Mode: e.Mode, OID: e.Blob}
}

func toStoreEntry(e overlay.Entry) OverlayEntry {
	st := StatusAdded
	switch e.Status {
	case overlay.Modified:
		st = StatusModified
	case overlay.Deleted:
		st = StatusDeleted
	}
	return OverlayEntry{Path: e.Path, Status: st, Blob: e.OID, Mode: e.Mode}
}

// overlayDelta is what turns before into after (a clone of before that
// an operation changed), as store changes: the entries after added or
// changed, in git order, then those it removed, in git order. Only the
// paths after's entries touched are compared, so the cost follows the
// change, not the size of the overlay.
func overlayDelta(before, after *overlay.Overlay) []OverlayChange {
	type keyed struct {
		key string
		c   OverlayChange
	}
	var changed, removed []keyed
	for _, p := range after.Touched() {
		o, had := before.Get(p)
		e, has := after.Get(p)
		switch {
		case has && (!had || o.Status != e.Status || o.OID != e.OID || o.Mode != e.Mode):
			changed = append(changed, keyed{entryKey(e), OverlayChange{Entry: toStoreEntry(e)}})
		case had && !has:
			removed = append(removed, keyed{entryKey(o), OverlayChange{Entry: OverlayEntry{Path: p}, Remove: true}})
		}
	}
	byKey := func(a, b keyed) int { return strings.Compare(a.key, b.key) }
	slices.SortFunc(changed, byKey)
	slices.SortFunc(removed, byKey)
	var out []OverlayChange
	for _, k := range append(changed, removed...) {
		out = append(out, k.c)
	}
	return out
}

// recorder owns how a change to a loaded session becomes durable, in the
// order of the package's durability invariant (objects, refs, then one
// store transaction with the change's events), and who hears of it after
// the commit: the event log's streams and the observers. Every write
// path (mutations, whole-overlay replacements, checkpoints, state
// changes) goes through it, and it refuses writes a session does not
// take. Its methods' receiver is m, as the Manager's, whose part it is.
type recorder struct {
	store  Store
	events *events.Log
	// observers is fixed at construction.
	observers []Observer
	limits    Limits
	now       func() time.Time
	ovOpts    overlay.Options
	workdirs  *workdir.Manager // a finished session's scratch is removed here
	repos     *repos.Registry  // the secrets a write may not hold
	// commits are the group committers of mutations, one per repository
	// (commit.go).
	commits committers
	// ended, when set, learns of every session that ended (the
	// Executor stops its services).
	ended func(id uuid.UUID)
	// mutated, when set, learns of every committed mutation, with the
	// session's lock held (the Executor brings it into the view of the
	// session's running services).
	mutated func(ctx context.Context, ls *live)
}

// removeScratch deletes a finished session's scratch directory at once
// (its ignored outputs can be large), unless a command still runs in it
// (Exec removes it when that command ends). ls.mu must be held. Best
// effort: a scratch left behind costs disk, never correctness.
func (m *recorder) removeScratch(ls *live) {
	if m.workdirs != nil && !ls.busy && ls.meta.State.Terminal() {
		_ = m.workdirs.Remove(ls.meta.ID.String())
	}
}

// entryKey is e's place in git order: a directory sorts as "name/".
func entryKey(e overlay.Entry) string {
	if e.Mode.IsDir() {
		return e.Path + "/"
	}
	return e.Path
}

// checkOpen refuses operations on a closed or expired session; a session
// found past its expiry is expired now. ls.mu must be held.
func (m *recorder) checkOpen(ctx context.Context, ls *live) error {
	if !ls.meta.State.Terminal() && !ls.meta.ExpiresAt.IsZero() && !m.now().Before(ls.meta.ExpiresAt) {
		if err := m.setState(ctx, ls, StateExpired); err != nil {
			return err
		}
	}
	if ls.meta.State.Terminal() {
		return fmt.Errorf("session %s is %s: %w", ls.meta.ID, ls.meta.State, record.ErrSessionClosed)
	}
	return nil
}

// checkWritable is checkOpen plus the session's mode.
func (m *recorder) checkWritable(ctx context.Context, ls *live) error {
	if err := m.checkOpen(ctx, ls); err != nil {
		return err
	}
	if ls.busy {
		return fmt.Errorf("session %s: %w", ls.meta.ID, ErrBusy)
	}
	if ls.meta.Mode == ModeReadOnly {
		return fmt.Errorf("session %s: %w", ls.meta.ID, ErrReadOnly)
	}
	return nil
}

// change is what one mutation did to one path, for the log and events.
type change struct {
	path     string
	old, new gitstore.OID
	// oldMode and newMode are the file's modes before and after (zero
	// for none): a change of mode alone is a change.
	oldMode, newMode gitstore.Mode
	deleted          bool
}

// draft is a mutation in flight: an operation in progress on a copy of
// the overlay, with the objects it queued. Committed by recorder.mutate,
// it becomes a MutationRecord; refused, it is dropped and nothing changed.
type draft struct {
	ov    *overlay.Overlay
	batch *gitstore.Batch
	paths []string
	// pending holds the content of blobs queued in batch, which the
	// repository cannot read until the batch is flushed.
	pending map[gitstore.OID][]byte
	repo    *gitstore.Repo
	// exec, for an exec mutation, is recorded with it.
	exec *ExecInfo
	// limits are the engine's, for the rules of each write.
	limits Limits
	// secrets finds the repository's secret values in written content
	// (the secret rule).
	secrets *secret.Masker
}

// addBlob queues a blob and keeps it readable within the mutation.
func (mu *draft) addBlob(data []byte) gitstore.OID {
	id := mu.batch.AddBlob(data)
	mu.pending[id] = data
	return id
}

// readBlob reads a blob queued in this mutation or in the repository.
func (mu *draft) readBlob(ctx context.Context, id gitstore.OID) ([]byte, error) {
	if data, ok := mu.pending[id]; ok {
		return data, nil
	}
	return mu.repo.ReadBlob(ctx, id)
}

// blobSize is the size of a blob queued in this mutation or in the
// repository.
func (mu *draft) blobSize(ctx context.Context, id gitstore.OID) (int64, error) {
	if data, ok := mu.pending[id]; ok {
		return int64(len(data)), nil
	}
	return mu.repo.BlobSize(ctx, id)
}

// read returns the content of file p in the mutation's view.
func (mu *draft) read(ctx context.Context, p string) ([]byte, error) {
	n, err := mu.ov.Stat(ctx, p)
	if err != nil {
		return nil, notFound(err)
	}
	if !n.Mode.IsBlob() {
		return nil, fmt.Errorf("read %q: %w: %w", p, record.ErrInvalid, overlay.ErrIsDir)
	}
	return mu.readBlob(ctx, n.OID)
}

// touch records that the mutation changed p.
func (mu *draft) touch(p string) { mu.paths = append(mu.paths, p) }

// mutate runs fn on a copy of the session's overlay and makes the result
// durable, or changes nothing: new objects are written and fsynced, the
// live ref is moved to the new tree, and the mutation, its overlay changes
// and its events are committed in one store transaction. Only then does
// the session see the new overlay. With dryRun nothing is written and the
// session keeps its overlay. ls.mu must be held.
func (m *recorder) mutate(ctx context.Context, ls *live, op Op, actor string, dryRun bool, fn func(*draft) error) (MutationRecord, []change, error) {
	if err := m.checkWritable(ctx, ls); err != nil {
		return MutationRecord{}, nil, err
	}
	vars, err := m.repos.Variables(ctx, ls.meta.Repo)
	if err != nil {
		return MutationRecord{}, nil, err
	}
	mu := &draft{ov: ls.ov.Clone(), batch: ls.repo.NewBatch(), pending: map[gitstore.OID][]byte{}, repo: ls.repo, limits: m.limits, secrets: vars.Masker}
	// The content rules read the blobs this mutation queues.
	mu.ov.ReadBlobsWith(mu.readBlob)
	if err := fn(mu); err != nil {
		return MutationRecord{}, nil, err
	}
	if mu.ov.Len() > m.limits.MaxEntries {
		return MutationRecord{}, nil, fmt.Errorf("%w: %d overlay entries, the limit is %d", ErrTooLarge, mu.ov.Len(), m.limits.MaxEntries)
	}
	if mu.ov.ContentBytes() > m.limits.MaxOverlayBytes {
		return MutationRecord{}, nil, fmt.Errorf("%w: %d bytes of overlay content, the limit is %d", ErrTooLarge, mu.ov.ContentBytes(), m.limits.MaxOverlayBytes)
	}
	changes, err := describe(ctx, ls.ov, mu.ov, mu.paths)
	if err != nil {
		return MutationRecord{}, nil, err
	}
	delta := overlayDelta(ls.ov, mu.ov)
	now := m.now()
	rec := MutationRecord{Session: ls.meta.ID, Op: op, Actor: actor, At: now, Exec: mu.exec}
	for _, c := range changes {
		rec.Paths = append(rec.Paths, c.path)
		rec.Old = append(rec.Old, c.old)
		rec.New = append(rec.New, c.new)
	}
	if dryRun || len(delta) == 0 {
		rec.Seq = ls.meta.Seq
		return rec, changes, nil
	}
	tree, err := nextTree(ctx, ls.tree, mu)
	if err != nil {
		return MutationRecord{}, nil, err
	}
	expires := m.nextExpiry(ls, now)
	reads := ls.reads.pending()
	c := &commit{
		ctx:     ctx,
		objects: mu.batch,
		ref:     gitstore.RefUpdate{Name: liveRef(ls.meta.ID), New: tree, Old: ls.pinned},
		tx: func(ctx context.Context, tx Tx) error {
			// rec keeps its fields when the append fails: the record may
			// be tried again (alone, or in a retried transaction).
			rec.Seq = 0
			appended, err := tx.AppendMutation(ctx, rec, delta)
			if err != nil {
				return err
			}
			rec = appended
			if err := tx.TouchSession(ctx, ls.meta.ID, now, expires); err != nil {
				return err
			}
			if err := saveReads(ctx, tx, ls.meta.ID, reads); err != nil {
				return err
			}
			for _, c := range changes {
				if _, err := tx.AppendEvent(ctx, fileEvent(ls.meta, rec.Seq, c, now)); err != nil {
					return err
				}
			}
			if rec.Exec != nil {
				if _, err := tx.AppendEvent(ctx, execEvent(ls.meta, rec, now)); err != nil {
					return err
				}
			}
			return nil
		},
	}
	err = m.durable(ls.repo, c)
	if c.refMoved {
		ls.pinned = tree
	}
	if err != nil {
		return MutationRecord{}, nil, err
	}
	// Published frozen (which lets the mutation's pending blobs go):
	// reads that took the previous overlay go on with it.
	ls.ov = mu.ov.Freeze()
	ls.tree = tree
	ls.reads.saved(reads)
	ls.meta.Seq = rec.Seq
	ls.meta.LastActiveAt = now
	if !expires.IsZero() {
		ls.meta.ExpiresAt = expires
	}
	m.events.Notify()
	m.observeMutation(ctx, ls, rec, changes)
	return rec, changes, nil
}

// saveReads records reads (readSet.pending) in tx; the caller passes
// them to readSet.saved once tx committed.
func saveReads(ctx context.Context, tx Tx, id uuid.UUID, reads map[string]gitstore.OID) error {
	if len(reads) == 0 {
		return nil
	}
	return tx.RecordReads(ctx, id, reads)
}

// flushReads saves the session's unsaved reads now. ls.mu must be held.
func (m *memory) flushReads(ctx context.Context, ls *live) error {
	reads := ls.reads.pending()
	if err := saveReads(ctx, m.store, ls.meta.ID, reads); err != nil {
		return fmt.Errorf("session %s: save read set: %w", ls.meta.ID, err)
	}
	ls.reads.saved(reads)
	return nil
}

// nextTree is the tree of the mutation's view: prev, the tree before it,
// with the paths the mutation touched re-encoded. The cost follows those
// paths, not the size of the overlay.
func nextTree(ctx context.Context, prev gitstore.OID, mu *draft) (gitstore.OID, error) {
	roots := slices.Clone(mu.paths)
	slices.Sort(roots)
	roots = slices.Compact(roots)
	touched := make(map[string]bool, len(roots))
	for _, r := range roots {
		touched[r] = true
	}
	changes := make([]gitstore.Change, 0, len(roots))
	for i, r := range roots {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return gitstore.ZeroOID, err
			}
		}
		// Skip a path below another touched path: the ancestor's change
		// rebuilds it. Looking its ancestors up keeps this linear in the
		// paths' length, however many were touched.
		if underTouched(r, touched) {
			continue
		}
		c, err := mu.ov.ChangeAt(ctx, mu.batch, r)
		if err != nil {
			return gitstore.ZeroOID, err
		}
		changes = append(changes, c)
	}
	return mu.batch.BuildTree(ctx, prev, changes)
}

// underTouched reports whether a strict ancestor of p is in touched.
func underTouched(p string, touched map[string]bool) bool {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' && touched[p[:i]] {
			return true
		}
	}
	return false
}

// checkEvery is how many items (paths, entries, lines) a loop over a
// request's input handles between looks at the request's context, so
// that a client that leaves stops the work.
const checkEvery = 1 << 12

// nextExpiry is the expiry after activity at now: the idle TTL from now,
// capped by the absolute lifetime.
func (m *recorder) nextExpiry(ls *live, now time.Time) time.Time {
	if ls.ttl <= 0 {
		return time.Time{}
	}
	exp := now.Add(ls.ttl)
	if m.limits.MaxLifetime > 0 {
		if limit := ls.meta.CreatedAt.Add(m.limits.MaxLifetime); exp.After(limit) {
			exp = limit
		}
	}
	return exp
}

// describe resolves, for each touched path, the file's blob before and
// after (zero for none). A touched directory reports every file below it
// that changed.
func describe(ctx context.Context, before, after *overlay.Overlay, paths []string) ([]change, error) {
	seen := map[string]bool{}
	var out []change
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		var c change
		c.path = p
		if n, err := before.Stat(ctx, p); err == nil && n.Mode.IsBlob() {
			c.old, c.oldMode = n.OID, n.Mode
		} else if err != nil && !errors.Is(err, overlay.ErrNotFound) {
			return err
		}
		n, err := after.Stat(ctx, p)
		switch {
		case err == nil && n.Mode.IsBlob():
			c.new, c.newMode = n.OID, n.Mode
		case err == nil && n.IsDir():
		case errors.Is(err, overlay.ErrNotFound):
			c.deleted = true
		default:
			return err
		}
		if c.old != c.new || c.oldMode != c.newMode {
			if c.new.IsZero() {
				c.deleted = true // a file became a directory
			}
			out = append(out, c)
		}
		return nil
	}
	for i, p := range paths {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// A directory on either side (a batch may turn one into a file
		// or back): every file below it on that side, and p itself.
		for _, o := range []*overlay.Overlay{before, after} {
			n, err := o.Stat(ctx, p)
			if err != nil || !n.IsDir() {
				if err != nil && !errors.Is(err, overlay.ErrNotFound) {
					return nil, err
				}
				continue
			}
			err = o.List(ctx, overlay.ListOptions{Prefix: p, Recursive: true}, func(n overlay.Node) error {
				if n.IsDir() {
					return nil
				}
				return add(n.Path)
			})
			if err != nil && !errors.Is(err, overlay.ErrNotFound) {
				return nil, err
			}
		}
		if err := add(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}
