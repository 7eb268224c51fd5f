package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
)

// Mutations returns up to limit mutations after sequence number after.
func (m *Manager) Mutations(ctx context.Context, id uuid.UUID, after int64, limit int) ([]MutationRecord, error) {
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return nil, err // the store's error names the session
	}
	pol, err := compilePolicy(s.Policy)
	if err != nil {
		return nil, err
	}
	ms, err := m.store.ListMutations(ctx, id, after, limit)
	for i := range ms {
		ms[i] = pol.visible(ms[i])
	}
	return ms, err
}

// committer is the identity on the commits sessiond writes for a session.
func committer(s Session, now gitstore.Signature) gitstore.Signature {
	return info(s).Author(now.When)
}

// Checkpoint commits the session's current view: a commit of the base
// tree plus the overlay whose parent is the previous checkpoint (or the
// base), kept under refs/sessions/<id>/checkpoints/<n> and
// refs/sessions/<id>/head.
func (m *Manager) Checkpoint(ctx context.Context, id uuid.UUID, label, message string) (Checkpoint, error) {
	if err := m.captureServices(ctx, id); err != nil {
		return Checkpoint{}, err
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Checkpoint{}, err
	}
	defer ls.unlock()
	if err := m.recorder.checkOpen(ctx, ls); err != nil {
		return Checkpoint{}, err
	}
	return m.recorder.checkpoint(ctx, ls, label, message)
}

// checkpoint commits ls.tree; ls.mu must be held. Order: the commit is
// durable, then the refs move, then the store row commits (moving the
// session head by compare-and-swap). A crash between leaves refs ahead of
// the store, which load repairs.
func (m *recorder) checkpoint(ctx context.Context, ls *live, label, message string) (Checkpoint, error) {
	return m.checkpointTree(ctx, ls, ls.tree, label, message)
}

// checkpointTree commits tree as the session's next checkpoint (a commit
// made in the view holds only what it staged, not always ls.tree).
func (m *recorder) checkpointTree(ctx context.Context, ls *live, tree gitstore.OID, label, message string) (Checkpoint, error) {
	now := m.now()
	n := ls.meta.Checkpoints + 1
	if message == "" {
		message = fmt.Sprintf("checkpoint %d of session %s", n, ls.meta.ID)
		if label != "" {
			message = label
		}
	}
	sig := committer(ls.meta, gitstore.Signature{When: now})
	commit, err := ls.repo.WriteCommit(ctx, gitstore.NewCommit{
		Tree: tree, Parents: []gitstore.OID{ls.meta.Head},
		Author: sig, Committer: sig,
		Message: message + "\n\nSessiond-Session: " + ls.meta.ID.String() + "\nSessiond-Seq: " + strconv.FormatInt(ls.meta.Seq, 10) +
			"\n" + trailerBase + ls.meta.BaseCommit.String() + "\n",
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	if err := setRef(ctx, ls.repo, CheckpointRef(ls.meta.ID, n), commit); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	if err := setRef(ctx, ls.repo, headRef(ls.meta.ID), commit); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	cp := Checkpoint{Session: ls.meta.ID, Commit: commit, Tree: tree, Parent: ls.meta.Head, Seq: ls.meta.Seq, Label: label, Message: message, CreatedAt: now}
	reads := ls.reads.pending()
	err = m.store.InTx(ctx, func(tx Tx) error {
		var err error
		if cp, err = tx.CreateCheckpoint(ctx, cp); err != nil {
			return err
		}
		if cp.N != n {
			return fmt.Errorf("checkpoint number %d, expected %d: %w", cp.N, n, record.ErrConflict)
		}
		if err := saveReads(ctx, tx, ls.meta.ID, reads); err != nil {
			return err
		}
		_, err = tx.AppendEvent(ctx, checkpointEvent(ls.meta, cp))
		return err
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("record checkpoint: %w", err)
	}
	ls.meta.Head = commit
	ls.meta.Checkpoints = n
	ls.reads.saved(reads)
	m.events.Notify()
	return cp, nil
}

// Checkpoints lists a session's checkpoints in order.
func (m *Manager) Checkpoints(ctx context.Context, id uuid.UUID) ([]Checkpoint, error) {
	if _, err := m.store.GetSession(ctx, id); err != nil {
		return nil, err // the store's error names the session
	}
	return m.store.ListCheckpoints(ctx, id)
}

// FindCheckpoint resolves a checkpoint of session id by its id, its number,
// its commit id or its label. A label that several checkpoints carry is
// ambiguous and refused.
func (m *Manager) FindCheckpoint(ctx context.Context, id uuid.UUID, ref string) (Checkpoint, error) {
	cps, err := m.Checkpoints(ctx, id)
	if err != nil {
		return Checkpoint{}, err
	}
	for _, c := range cps {
		if c.ID.String() == ref || strconv.Itoa(c.N) == ref || c.Commit.String() == ref {
			return c, nil
		}
	}
	var labelled []Checkpoint
	for _, c := range cps {
		if ref != "" && c.Label == ref {
			labelled = append(labelled, c)
		}
	}
	switch len(labelled) {
	case 0:
		return Checkpoint{}, fmt.Errorf("checkpoint %q: %w", ref, record.ErrNotFound)
	case 1:
		return labelled[0], nil
	}
	ns := make([]string, len(labelled))
	for i, c := range labelled {
		ns[i] = strconv.Itoa(c.N)
	}
	return Checkpoint{}, fmt.Errorf("%w: label %q names checkpoints %s; give a number", record.ErrInvalid, ref, strings.Join(ns, ", "))
}

// AgainstTree resolves what a diff of session id compares with: "" or
// "base" is its base tree, then a checkpoint of its own (its id, number
// or commit id), then a revision of the session's repository as `git
// rev-parse 'rev^{tree}'` resolves it, within the caller's reach
// (ResolveRevision): a session token never names another session's refs
// or what only they reach.
func (m *Manager) AgainstTree(ctx context.Context, id uuid.UUID, against string) (gitstore.OID, error) {
	if against == "" || against == "base" {
		_, base, err := m.Tree(ctx, id)
		return base, err
	}
	cp, err := m.FindCheckpoint(ctx, id, against)
	if err == nil {
		return cp.Tree, nil
	}
	if !errors.Is(err, record.ErrNotFound) {
		return gitstore.OID{}, err
	}
	s, gerr := m.Get(ctx, id)
	if gerr != nil {
		return gitstore.OID{}, gerr
	}
	r, gerr := m.repos.Open(ctx, s.Repo)
	if gerr != nil {
		return gitstore.OID{}, gerr
	}
	tree, rerr := resolveRevision(ctx, r, "against", against, gitstore.KindTree)
	if errors.Is(rerr, record.ErrNotFound) {
		return gitstore.OID{}, fmt.Errorf("against %q: no checkpoint or revision by that name: %w", against, record.ErrNotFound)
	}
	return tree, rerr
}

// overlayFromTree returns the overlay over base that turns baseTree into
// target: the changes between the two trees, deletions first.
func (m *recorder) overlayFromTree(ctx context.Context, r *gitstore.Repo, base overlay.Base, baseTree, target gitstore.OID) (*overlay.Overlay, error) {
	ov := overlay.New(base, m.ovOpts)
	var puts []merge.FileChange
	err := merge.WalkChanges(ctx, r, baseTree, target, func(c merge.FileChange) error {
		if c.To().Mode == 0 {
			// Deleting the last file of a directory collapses it into a
			// directory whiteout, as the overlay always does.
			if err := ov.Delete(ctx, c.Path()); err != nil && !errors.Is(err, overlay.ErrNotFound) {
				return err
			}
			return nil
		}
		if c.From().Mode != 0 && c.From().Mode != c.To().Mode && (c.From().Mode == gitstore.ModeGitlink || c.To().Mode == gitstore.ModeGitlink) {
			return fmt.Errorf("%w: %q changes to or from a submodule", record.ErrInvalid, c.Path())
		}
		puts = append(puts, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, c := range puts {
		if c.To().Mode == gitstore.ModeGitlink {
			return nil, fmt.Errorf("%w: %q adds a submodule", record.ErrInvalid, c.Path())
		}
		size, err := r.BlobSize(ctx, c.To().OID)
		if err != nil {
			return nil, err
		}
		if err := ov.PutSized(ctx, c.Path(), c.To().OID, c.To().Mode, size); err != nil {
			return nil, err
		}
	}
	return ov, nil
}

// RollbackBase is the ref of Rollback that names the session's base: the
// session's own changes are all undone.
const RollbackBase = "base"

// trailerBase names, in a checkpoint's message, the base commit the
// session had when it was taken.
const trailerBase = "Sessiond-Base: "

// checkpointBase returns the base commit session ls had when checkpoint
// cp was taken: its Sessiond-Base trailer, or for checkpoints written
// before it had one, the first commit down the parent chain that is not
// one of the session's checkpoints.
func (m *recorder) checkpointBase(ctx context.Context, ls *live, cp Checkpoint) (gitstore.OID, error) {
	c, err := ls.repo.Commit(ctx, cp.Commit)
	if err != nil {
		return gitstore.OID{}, fmt.Errorf("checkpoint %d: %w", cp.N, err)
	}
	for _, line := range strings.Split(c.Message, "\n") {
		if v, ok := strings.CutPrefix(line, trailerBase); ok {
			if id, err := gitstore.ParseOID(strings.TrimSpace(v)); err == nil {
				return id, nil
			}
		}
	}
	cps, err := m.store.ListCheckpoints(ctx, ls.meta.ID)
	if err != nil {
		return gitstore.OID{}, err
	}
	parent := map[gitstore.OID]gitstore.OID{}
	for _, c := range cps {
		parent[c.Commit] = c.Parent
	}
	id := cp.Parent
	for range len(cps) + 1 {
		p, ok := parent[id]
		if !ok {
			return id, nil
		}
		id = p
	}
	return id, nil
}

// Rollback restores the session's overlay to a checkpoint (ref as
// FindCheckpoint takes it), or with RollbackBase to its base. It is
// recorded as a mutation, and a new checkpoint marks the result. A
// checkpoint taken on another base (before a rebase) keeps the current
// base: the session's own changes as of the checkpoint are merged onto
// it, three ways, as the rebase did; a conflict is a
// *merge.ConflictError and changes nothing. Upstream's work is never
// reverted.
func (m *Manager) Rollback(ctx context.Context, id uuid.UUID, ref, actor string) (Checkpoint, MutationRecord, error) {
	var cp Checkpoint
	if ref != RollbackBase {
		var err error
		if cp, err = m.FindCheckpoint(ctx, id, ref); err != nil {
			return Checkpoint{}, MutationRecord{}, err
		}
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Checkpoint{}, MutationRecord{}, err
	}
	defer ls.unlock()
	target, what := cp.Tree, fmt.Sprintf("rollback to checkpoint %d", cp.N)
	if ref == RollbackBase {
		target, what = ls.baseTree, "rollback to the base"
	} else {
		if err := m.recorder.checkWritable(ctx, ls); err != nil {
			return Checkpoint{}, MutationRecord{}, err
		}
		cpBase, err := m.recorder.checkpointBase(ctx, ls, cp)
		if err != nil {
			return Checkpoint{}, MutationRecord{}, err
		}
		if cpBase != ls.meta.BaseCommit {
			oldBaseTree, err := ls.repo.TreeOf(ctx, cpBase)
			if err != nil {
				return Checkpoint{}, MutationRecord{}, fmt.Errorf("checkpoint %d base: %w", cp.N, err)
			}
			res, err := merge.Rebase(ctx, ls.repo, oldBaseTree, cp.Tree, ls.baseTree, merge.MergeOptions{
				OursLabel: "base " + ls.meta.BaseCommit.String()[:12], TheirsLabel: fmt.Sprintf("checkpoint %d", cp.N), Render: true,
			})
			if err != nil {
				return Checkpoint{}, MutationRecord{}, fmt.Errorf("rollback to checkpoint %d onto the current base: %w", cp.N, err)
			}
			target = res.Tree
		}
	}
	rec, err := m.recorder.replaceOverlay(ctx, ls, OpRollback, actorOf(ls, actor), target, nil)
	if err != nil {
		return Checkpoint{}, MutationRecord{}, err
	}
	// Conflicts whose markers the rollback took away are gone, with no
	// resolution to remember.
	if _, err := m.dropResolved(ctx, ls, false); err != nil {
		return Checkpoint{}, MutationRecord{}, err
	}
	next, err := m.recorder.checkpoint(ctx, ls, what, "")
	return next, rec, err
}

// newBase is where a rebase moves a session: a commit and its tree.
type newBase struct {
	commit, tree gitstore.OID
}

// replaceOverlay makes the session's view equal to tree target, as one
// mutation op; with nb the session's base moves too (rebase). ls.mu must
// be held.
func (m *recorder) replaceOverlay(ctx context.Context, ls *live, op Op, actor string, target gitstore.OID, nb *newBase) (MutationRecord, error) {
	return m.replaceOverlayKeeping(ctx, ls, op, actor, target, nb, nil)
}

// replaceOverlayKeeping is replaceOverlay that, with kept not nil, also
// records *kept as the session's conflicts in the same transaction.
func (m *recorder) replaceOverlayKeeping(ctx context.Context, ls *live, op Op, actor string, target gitstore.OID, nb *newBase, kept *[]KeptConflict) (MutationRecord, error) {
	if err := m.checkWritable(ctx, ls); err != nil {
		return MutationRecord{}, err
	}
	if err := ls.checkReplaceWrites(ctx, target, nb); err != nil {
		return MutationRecord{}, fmt.Errorf("%s: %w", op, err)
	}
	baseView, baseTree := ls.ov.Base(), ls.baseTree
	if nb != nil {
		baseView, baseTree = ls.repo.View(nb.tree), nb.tree
	}
	ov, err := m.overlayFromTree(ctx, ls.repo, baseView, baseTree, target)
	if err != nil {
		return MutationRecord{}, err
	}
	tree, err := ov.BuildTree(ctx, ls.repo, baseTree)
	if err != nil {
		return MutationRecord{}, err
	}
	if tree != target {
		return MutationRecord{}, fmt.Errorf("replace overlay: rebuilt tree %s, want %s", tree, target)
	}
	if ov.Len() > m.limits.MaxEntries {
		return MutationRecord{}, fmt.Errorf("%w: %d overlay entries, the limit is %d", ErrTooLarge, ov.Len(), m.limits.MaxEntries)
	}
	if nb != nil {
		// The new base is pinned before the store points at it.
		if err := setRef(ctx, ls.repo, baseRef(ls.meta.ID), nb.commit); err != nil {
			return MutationRecord{}, fmt.Errorf("pin base: %w", err)
		}
		// The next checkpoint builds on the new base, so git log does
		// not attribute upstream's changes to the session; the earlier
		// checkpoints stay under their own refs.
		if ls.meta.Checkpoints > 0 {
			if err := setRef(ctx, ls.repo, headRef(ls.meta.ID), nb.commit); err != nil {
				return MutationRecord{}, fmt.Errorf("move head: %w", err)
			}
		}
	}
	var paths []string
	var olds, news []gitstore.OID
	var changes []change
	err = merge.WalkChanges(ctx, ls.repo, ls.tree, target, func(c merge.FileChange) error {
		paths = append(paths, c.Path())
		olds = append(olds, c.From().OID)
		news = append(news, c.To().OID)
		changes = append(changes, change{path: c.Path(), old: c.From().OID, new: c.To().OID,
			oldMode: c.From().Mode, newMode: c.To().Mode, deleted: c.To().OID.IsZero()})
		return nil
	})
	if err != nil {
		return MutationRecord{}, err
	}
	if err := setRef(ctx, ls.repo, liveRef(ls.meta.ID), tree); err != nil {
		return MutationRecord{}, fmt.Errorf("pin overlay: %w", err)
	}
	ls.pinned = tree
	now := m.now()
	entries := make([]OverlayEntry, 0, ov.Len())
	for _, e := range ov.Entries() {
		entries = append(entries, toStoreEntry(e))
	}
	rec := MutationRecord{Session: ls.meta.ID, Op: op, Paths: paths, Old: olds, New: news, Actor: actor, At: now}
	if rec.Paths == nil {
		rec.Paths = []string{}
	}
	reads := ls.reads.pending()
	err = m.store.InTx(ctx, func(tx Tx) error {
		var err error
		if nb != nil {
			if err := tx.SetSessionBase(ctx, ls.meta.ID, ls.meta.BaseCommit, nb.commit); err != nil {
				return err
			}
			if err := tx.SetSessionHead(ctx, ls.meta.ID, ls.meta.Head, nb.commit); err != nil {
				return err
			}
		}
		if rec, err = tx.ReplaceOverlay(ctx, rec, entries); err != nil {
			return err
		}
		if kept != nil {
			if err := tx.PutConflicts(ctx, ls.meta.ID, *kept); err != nil {
				return err
			}
		}
		if err := tx.TouchSession(ctx, ls.meta.ID, now, m.nextExpiry(ls, now)); err != nil {
			return err
		}
		if err := saveReads(ctx, tx, ls.meta.ID, reads); err != nil {
			return err
		}
		for _, c := range changes {
			if !ls.policy.canRead(c.path) {
				continue // the session's own stream shows only its view
			}
			if _, err := tx.AppendEvent(ctx, fileEvent(ls.meta, rec.Seq, c, now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return MutationRecord{}, fmt.Errorf("record %s: %w", op, err)
	}
	ls.ov, ls.tree = ov.Freeze(), tree
	ls.reads.saved(reads)
	if nb != nil {
		ls.baseTree, ls.meta.BaseCommit, ls.meta.Head = nb.tree, nb.commit, nb.commit
	}
	ls.meta.Seq = rec.Seq
	ls.meta.LastActiveAt = now
	m.events.Notify()
	m.observeMutation(ctx, ls, rec, changes)
	return ls.policy.visible(rec), nil
}

// checkReplaceWrites applies the session's write policy to every path
// that replacing its view with target writes, before anything is
// written: the paths whose content changes. On a rebase (nb set) a path
// that comes out equal to the new base is upstream's change, not the
// session's, and is not a write. ls.mu must be held.
func (ls *live) checkReplaceWrites(ctx context.Context, target gitstore.OID, nb *newBase) error {
	var keep func(string) bool
	if nb != nil {
		own := map[string]bool{}
		err := merge.WalkChanges(ctx, ls.repo, nb.tree, target, func(c merge.FileChange) error {
			own[c.Path()] = true
			return nil
		})
		if err != nil {
			return err
		}
		keep = func(p string) bool { return own[p] }
	}
	return ls.policy.checkTreeWrites(ctx, ls.repo, ls.tree, target, keep)
}

// ForkOptions describe a fork.
type ForkOptions struct {
	AgentID   string
	AgentName string
	Intent    string
	// Checkpoint forks from that checkpoint (id, number or commit) instead
	// of the current view.
	Checkpoint string
	// Mode is the source's when empty; read_write from a read_only source
	// is refused (ErrReadOnly).
	Mode Mode
	// Policy narrows the source's policy (see narrow); the source's when
	// nil. It never widens it.
	Policy *Policy
}

// Fork starts a new session on the same base whose view equals the
// source's current view, or one of its checkpoints.
func (m *Manager) Fork(ctx context.Context, id uuid.UUID, opts ForkOptions) (Session, error) {
	// A fork never widens what its source may do: a read_only source
	// forks read_only (checked before anything is loaded or written), and
	// the fork's policy is its source's narrowed by what it asks for.
	meta, err := m.store.GetSession(ctx, id)
	if err != nil {
		return Session{}, err // the store's error names the session
	}
	if meta.Mode == ModeReadOnly && opts.Mode != "" && opts.Mode != ModeReadOnly {
		return Session{}, fmt.Errorf("fork %s as %s: %w: a fork may only narrow its source's mode", id, opts.Mode, ErrReadOnly)
	}
	if opts.Policy != nil {
		if _, err := compilePolicy(*opts.Policy); err != nil {
			return Session{}, err
		}
	}
	var target gitstore.OID
	var cp Checkpoint
	if opts.Checkpoint != "" {
		var err error
		if cp, err = m.FindCheckpoint(ctx, id, opts.Checkpoint); err != nil {
			return Session{}, err
		}
		target = cp.Tree
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Session{}, err
	}
	src := ls.meta
	if opts.AgentID == "" && opts.AgentName == "" { // the source's agent goes on
		opts.AgentID, opts.AgentName = src.AgentID, src.AgentName
	}
	baseCommit, baseView, baseTree := src.BaseCommit, ls.ov.Base(), ls.baseTree
	if target.IsZero() {
		target = ls.tree
	} else if cpBase, err := m.recorder.checkpointBase(ctx, ls, cp); err != nil {
		ls.unlock()
		return Session{}, err
	} else if cpBase != baseCommit {
		// A checkpoint from before a rebase: the fork starts on the base
		// it was taken on, so its diff holds only the session's changes.
		if baseTree, err = ls.repo.TreeOf(ctx, cpBase); err != nil {
			ls.unlock()
			return Session{}, fmt.Errorf("checkpoint %d base: %w", cp.N, err)
		}
		baseCommit, baseView = cpBase, ls.repo.View(baseTree)
	}
	ov, err := m.recorder.overlayFromTree(ctx, ls.repo, baseView, baseTree, target)
	ttl := ls.ttl
	ls.unlock()
	if err != nil {
		return Session{}, err
	}
	entries := make([]OverlayEntry, 0, ov.Len())
	for _, e := range ov.Entries() {
		entries = append(entries, toStoreEntry(e))
	}
	mode := opts.Mode
	if mode == "" {
		mode = src.Mode
	}
	if src.Mode == ModeReadOnly && mode != ModeReadOnly {
		return Session{}, fmt.Errorf("fork %s as %s: %w: a fork may only narrow its source's mode", id, mode, ErrReadOnly)
	}
	policy := narrow(src.Policy, opts.Policy)
	base := baseCommit.String()
	s, err := m.create(ctx, CreateOptions{
		Repo: src.Repo, Base: base, AgentID: opts.AgentID, AgentName: opts.AgentName,
		Intent: opts.Intent, Mode: mode, TTL: ttl, Policy: policy, Caches: src.Caches, Env: src.Env,
		forkBaseRef: src.BaseRef, forkBase: baseCommit, forkTree: target,
	}, src.ID, entries)
	if err != nil {
		return Session{}, err
	}
	return s, nil
}
