package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// What package changeset needs of the engine: a session held under its
// lock (record.Held), its metadata, its write policy applied to a
// changeset, and the resolver of callers' revisions (ResolveRevision,
// reach.go). The changeset's life itself is not here: see package
// changeset.

// Hold loads session id and takes its lock for a changeset operation;
// the caller must Release it.
func (m *Manager) Hold(ctx context.Context, id uuid.UUID) (record.Held, error) {
	if err := m.captureServices(ctx, id); err != nil {
		return nil, err
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	return &held{m: m, ls: ls}, nil
}

// SessionInfo returns what a changeset needs of session id, from the
// store.
func (m *Manager) SessionInfo(ctx context.Context, id uuid.UUID) (record.SessionInfo, error) {
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return record.SessionInfo{}, err
	}
	return info(s), nil
}

// CheckWrites holds a change from tree base to tree head to session id's
// write policy: every path it changes must be one the session may write,
// or it is record.ErrForbidden.
func (m *Manager) CheckWrites(ctx context.Context, id uuid.UUID, repo *gitstore.Repo, base, head gitstore.OID) error {
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	pol, err := compilePolicy(s.Policy)
	if err != nil {
		return err
	}
	return pol.checkTreeWrites(ctx, repo, base, head, nil)
}

func info(s Session) record.SessionInfo {
	return record.SessionInfo{ID: s.ID, Repo: s.Repo, AgentID: s.AgentID, AgentName: s.AgentName, Intent: s.Intent,
		BaseCommit: s.BaseCommit, BaseRef: s.BaseRef, Head: s.Head, State: s.State}
}

// held is a session under its lock for package changeset.
type held struct {
	m  *Manager
	ls *live
	// moved is the state MoveState moved to, from, at when; applied by
	// Committed.
	moved bool
	to    State
	at    time.Time
}

func (h *held) Info() record.SessionInfo { return info(h.ls.meta) }

func (h *held) CheckOpen(ctx context.Context) error { return h.m.recorder.checkOpen(ctx, h.ls) }

func (h *held) Changed() bool { return h.ls.tree != h.ls.baseTree }

func (h *held) Freeze(ctx context.Context, message string) (gitstore.OID, map[string]gitstore.OID, error) {
	ls := h.ls
	head := ls.meta.Head
	if c, err := ls.repo.Commit(ctx, head); err != nil {
		return gitstore.OID{}, nil, err
	} else if ls.meta.Checkpoints == 0 || c.Tree != ls.tree {
		cp, err := h.m.recorder.checkpoint(ctx, ls, "submit", message)
		if err != nil {
			return gitstore.OID{}, nil, err
		}
		head = cp.Commit
	}
	if err := h.m.mem.flushReads(ctx, ls); err != nil {
		return gitstore.OID{}, nil, err
	}
	return head, ls.reads.snapshot(), nil
}

// stateFence is what a fenced store adds (a cluster node's,
// internal/clustersession): the check, inside a transaction of another
// engine (an accept's), that this node still owns the session whose
// state it moves.
type stateFence interface {
	FenceState(ctx context.Context, tx record.StateTx, id uuid.UUID) error
}

func (h *held) MoveState(ctx context.Context, tx record.StateTx, to State, at time.Time) error {
	if f, ok := h.m.store.(stateFence); ok {
		if err := f.FenceState(ctx, tx, h.ls.meta.ID); err != nil {
			return err
		}
	}
	from := h.ls.meta.State
	if err := tx.SetSessionState(ctx, h.ls.meta.ID, from, to, at); err != nil {
		return err
	}
	next := h.ls.meta
	next.State = to
	if _, err := tx.AppendEvent(ctx, stateEvent(next, from, at)); err != nil {
		return err
	}
	h.moved, h.to, h.at = true, to, at
	return nil
}

func (h *held) Committed(ctx context.Context) {
	if !h.moved {
		return
	}
	h.moved = false
	h.ls.meta.State = h.to
	h.ls.meta.LastActiveAt = h.at
	if h.to.Terminal() {
		h.m.recorder.observeClosed(ctx, h.ls.meta)
		h.m.recorder.removeScratch(h.ls)
	}
}

func (h *held) Rebase(ctx context.Context, commit gitstore.OID, mergeChanges bool, actor, branch string) error {
	ls := h.ls
	c, err := ls.repo.Commit(ctx, commit)
	if err != nil {
		return fmt.Errorf("read the accepted commit: %w", err)
	}
	target := ls.tree
	if mergeChanges {
		merged, err := merge.Rebase(ctx, ls.repo, ls.baseTree, ls.tree, c.Tree, merge.MergeOptions{
			OursLabel: branch, TheirsLabel: "session " + ls.meta.ID.String()[:8], Render: true,
		})
		var ce *merge.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		if err != nil {
			return fmt.Errorf("rebase the session: %w", err)
		}
		target = merged.Tree
	}
	if _, err := h.m.recorder.replaceOverlay(ctx, ls, OpRebase, actor, target, &newBase{commit: commit, tree: c.Tree}); err != nil {
		return fmt.Errorf("rebase the session: %w", err)
	}
	return nil
}

func (h *held) Release() { h.ls.unlock() }
