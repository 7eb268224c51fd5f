package graph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Merge is the outcome of a trial merge of two sessions' versions of a
// file.
type Merge string

// Trial merge outcomes.
const (
	MergeClean    Merge = "clean"
	MergeConflict Merge = "conflict"
	// MergeUnknown: the sessions have different bases, so there is no
	// common ancestor to merge from.
	MergeUnknown Merge = "unknown"
)

// Overlap is the payload of an overlap.detected event, as the session it
// is addressed to sees it: Other changed Path too.
type Overlap struct {
	Session    uuid.UUID `json:"session"`
	Other      uuid.UUID `json:"other"`
	OtherAgent string    `json:"other_agent,omitempty"`
	Path       string    `json:"path"`
	// Symbols are the symbols both sessions changed in Path; empty when
	// they changed different ones (or the language has no symbols).
	Symbols []Key `json:"symbols"`
	// Ours and Theirs are the symbols each session changed in Path.
	Ours   []Key `json:"ours"`
	Theirs []Key `json:"theirs"`
	// Merge is whether a three-way merge of the two versions of Path over
	// their common base would conflict.
	Merge Merge `json:"merge"`
	// Seq is the mutation of the session that found the overlap (By).
	By  uuid.UUID `json:"by"`
	Seq int64     `json:"seq"`
}

// report trial-merges each overlap, and records an event for both
// sessions of every overlap that is new or whose finding changed.
func (g *Graph) report(ctx context.Context, rs *repoState, ev Mutation, overlaps []overlap) {
	if len(overlaps) == 0 {
		return
	}
	for _, ov := range overlaps {
		merge := MergeUnknown
		if ov.sameBase {
			var err error
			if merge, err = trialMerge(ctx, ev.Git, ov.ours.base, ov.ours.cur, ov.theirs.cur); err != nil {
				g.cfg.Logger.Warn("session graph: trial merge", "path", ov.path, "error", err)
			}
		}
		fp := string(merge) + "|" + keysString(ov.shared)
		k := pairKey(ev.Session, ov.other, ov.path)
		rs.mu.Lock()
		same := rs.reported[k] == fp
		if !same {
			rs.reported[k] = fp
		}
		rs.mu.Unlock()
		if same || g.cfg.Events == nil {
			continue
		}
		now := g.cfg.Now().UTC()
		mine := Overlap{Session: ev.Session, Other: ov.other, OtherAgent: ov.otherAgent, Path: ov.path,
			Symbols: nonNil(ov.shared), Ours: nonNil(ov.oursKeys), Theirs: nonNil(ov.theirsKeys),
			Merge: merge, By: ev.Session, Seq: ev.Seq}
		theirs := mine
		theirs.Session, theirs.Other, theirs.OtherAgent = ov.other, ev.Session, ev.AgentID
		theirs.Ours, theirs.Theirs = mine.Theirs, mine.Ours
		for _, o := range []Overlap{mine, theirs} {
			payload, err := json.Marshal(o)
			if err != nil {
				panic(err) // an Overlap always marshals
			}
			e := events.Event{Repo: ev.Repo, Session: o.Session, Type: EventOverlapDetected, Payload: payload, At: now}
			if err := g.cfg.Events.Append(ctx, e); err != nil {
				g.cfg.Logger.Warn("session graph: record overlap", "session", o.Session, "path", o.Path, "error", err)
				continue
			}
		}
	}
}

func keysString(ks []Key) string {
	var b strings.Builder
	for _, k := range ks {
		b.WriteString(k.String())
		b.WriteByte(';')
	}
	return b.String()
}

func nonNil(ks []Key) []Key {
	if ks == nil {
		return []Key{}
	}
	return ks
}

// trialMerge merges two versions of one file over their common base the
// way the tree merge does for a path both sides changed, without writing
// anything: identical results and both-deleted are clean, a deletion
// against a modification conflicts, and content goes through git's line
// merge (an add/add over the empty file).
func trialMerge(ctx context.Context, repo *gitstore.Repo, base, ours, theirs gitstore.OID) (Merge, error) {
	switch {
	case ours == theirs, base == ours, base == theirs:
		return MergeClean, nil
	case ours.IsZero(), theirs.IsZero():
		return MergeConflict, nil
	}
	read := func(id gitstore.OID) ([]byte, error) {
		if id.IsZero() {
			return nil, nil
		}
		return repo.ReadBlob(ctx, id)
	}
	b, err := read(base)
	if err != nil {
		return MergeUnknown, err
	}
	o, err := read(ours)
	if err != nil {
		return MergeUnknown, err
	}
	t, err := read(theirs)
	if err != nil {
		return MergeUnknown, err
	}
	if merge.MergeLines(b, o, t, merge.LineMergeOptions{Histogram: true}).Clean() {
		return MergeClean, nil
	}
	return MergeConflict, nil
}
