package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// repoState is the graph of one repository: its live sessions' deltas and
// the inverted index from path to the sessions that changed it.
type repoState struct {
	// mu guards every field below, and the fields of the sessionStates in
	// sessions. fileDeltas are immutable once stored, so a pointer read
	// under mu may be used after it is released.
	mu       sync.Mutex
	sessions map[uuid.UUID]*sessionState
	// byPath maps a path to the live sessions whose delta holds it: the
	// only sessions a write to that path can overlap with.
	byPath map[string]map[uuid.UUID]struct{}
	// reported is what was last reported for two sessions on one path, so
	// that each new finding is reported once and not on every write.
	reported map[overlapKey]string

	// q is the repository's queued work, with its own lock.
	q queue
}

// overlapKey names two sessions (a < b) on one path.
type overlapKey struct {
	a, b uuid.UUID
	path string
}

func pairKey(x, y uuid.UUID, p string) overlapKey {
	if strings.Compare(x.String(), y.String()) > 0 {
		x, y = y, x
	}
	return overlapKey{x, y, p}
}

// sessionState is one live session's delta over its base index. Only the
// session's own observer calls, which the engine serializes, change it.
type sessionState struct {
	id         uuid.UUID
	agent      string
	repo       *gitstore.Repo
	baseCommit gitstore.OID
	baseTree   gitstore.OID
	tree       gitstore.OID
	seq        int64
	files      map[string]*fileDelta
}

// fileDelta is what a session did to one path: its base and current blob
// (zero for none) and, for a language the index parses, the symbols.
type fileDelta struct {
	base, cur gitstore.OID
	baseFile  *File
	// syms is the session's file as last parsed: cur's symbols, or when cur
	// does not parse (parseErr) the previous version's.
	syms     *File
	parseErr string
	changes  SymbolChanges
}

func (d *fileDelta) status() string {
	switch {
	case d.base.IsZero():
		return "added"
	case d.cur.IsZero():
		return "deleted"
	}
	return "modified"
}

func (rs *repoState) link(p string, id uuid.UUID) {
	set := rs.byPath[p]
	if set == nil {
		set = map[uuid.UUID]struct{}{}
		rs.byPath[p] = set
	}
	set[id] = struct{}{}
}

// unlink drops session id from path p and forgets what was reported about
// it there, so that a new overlap on p is reported again.
func (rs *repoState) unlink(p string, id uuid.UUID) {
	set := rs.byPath[p]
	delete(set, id)
	for other := range set {
		delete(rs.reported, pairKey(id, other, p))
	}
	if len(set) == 0 {
		delete(rs.byPath, p)
	}
}

// update is a new delta for one path; nil d means the path is back to its
// base.
type update struct {
	path string
	d    *fileDelta
}

// overlap is one other session that changed a path this mutation changed.
type overlap struct {
	path          string
	other         uuid.UUID
	otherAgent    string
	otherSeq      int64
	ours, theirs  *fileDelta
	sameBase      bool
	shared        []Key
	oursKeys      []Key
	theirsKeys    []Key
	symbolsTraced bool // both sides' symbols are known
}

// apply brings the session's delta up to date with the mutation and
// returns the overlaps on the paths it changed. Blobs are read and parsed
// without holding rs.mu; only the bookkeeping is done under it. With
// force (mutations were coalesced) the delta comes from the trees.
func (g *Graph) apply(ctx context.Context, rs *repoState, ev Mutation, force bool) ([]overlap, error) {
	id := ev.Session
	rs.mu.Lock()
	st := rs.sessions[id]
	full := force || st == nil || st.baseTree != ev.BaseTree
	prev := map[string]*fileDelta{}
	if !full {
		for _, c := range ev.Changes {
			if d := st.files[c.Path]; d != nil {
				prev[c.Path] = d
			}
		}
	}
	rs.mu.Unlock()

	// A session met for the first time (created before a restart, forked,
	// or written before the graph existed) or moved to another base gets
	// its whole delta from the trees, in time proportional to its changes.
	type edit struct {
		path      string
		base, cur gitstore.OID
	}
	var edits []edit
	if full {
		err := merge.WalkChanges(ctx, ev.Git, ev.BaseTree, ev.Tree, func(c merge.FileChange) error {
			edits = append(edits, edit{c.Path(), blobOf(c.From()), blobOf(c.To())})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", id, err)
		}
	} else {
		for _, c := range ev.Changes {
			base := c.Old
			if d := prev[c.Path]; d != nil {
				base = d.base
			}
			edits = append(edits, edit{c.Path, base, c.New})
		}
	}
	var ups []update
	for _, e := range edits {
		if e.base == e.cur {
			ups = append(ups, update{path: e.path})
			continue
		}
		d, err := g.fileDelta(ctx, ev.Git, e.path, e.base, e.cur, prev[e.path])
		if err != nil {
			return nil, err
		}
		ups = append(ups, update{e.path, d})
	}
	slices.SortFunc(ups, func(a, b update) int { return strings.Compare(a.path, b.path) })

	g.mu.Lock()
	g.where[id] = rs
	g.mu.Unlock()

	rs.mu.Lock()
	defer rs.mu.Unlock()
	if st == nil || rs.sessions[id] == nil {
		st = &sessionState{id: id, files: map[string]*fileDelta{}}
		rs.sessions[id] = st
	}
	st.agent = ev.AgentID
	st.repo = ev.Git
	st.baseCommit, st.baseTree, st.tree = ev.BaseCommit, ev.BaseTree, ev.Tree
	st.seq = ev.Seq
	if full {
		keep := map[string]bool{}
		for _, u := range ups {
			keep[u.path] = true
		}
		for p := range st.files {
			if !keep[p] {
				delete(st.files, p)
				rs.unlink(p, id)
			}
		}
	}
	var out []overlap
	for _, u := range ups {
		if u.d == nil {
			if _, ok := st.files[u.path]; ok {
				delete(st.files, u.path)
				rs.unlink(u.path, id)
			}
			continue
		}
		st.files[u.path] = u.d
		rs.link(u.path, id)
		for other := range rs.byPath[u.path] {
			if other == id {
				continue
			}
			o := rs.sessions[other]
			if o.files[u.path].cur == u.d.cur {
				// The same version (a fork's inherited change, or the same
				// fix made twice) puts nobody at risk.
				continue
			}
			out = append(out, newOverlap(u.path, st, u.d, o))
		}
	}
	slices.SortFunc(out, func(a, b overlap) int {
		return cmpOr(strings.Compare(a.path, b.path), strings.Compare(a.other.String(), b.other.String()))
	})
	return out, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func newOverlap(p string, st *sessionState, ours *fileDelta, o *sessionState) overlap {
	theirs := o.files[p]
	ov := overlap{path: p, other: o.id, otherAgent: o.agent, otherSeq: o.seq,
		ours: ours, theirs: theirs, sameBase: o.baseTree == st.baseTree}
	ov.oursKeys, ov.theirsKeys = ours.changes.Keys(), theirs.changes.Keys()
	ov.symbolsTraced = ours.syms != nil && theirs.syms != nil
	for _, k := range ov.oursKeys {
		if _, found := slices.BinarySearchFunc(ov.theirsKeys, k, Key.compare); found {
			ov.shared = append(ov.shared, k)
		}
	}
	return ov
}

// blobOf is the blob of a tree entry, zero for none or a gitlink.
func blobOf(e gitstore.Entry) gitstore.OID {
	if !e.Mode.IsBlob() {
		return gitstore.ZeroOID
	}
	return e.OID
}

// fileDelta builds the delta of path p from base to cur. prev is the
// path's previous delta in the session, whose symbols stand in when cur
// does not parse.
func (g *Graph) fileDelta(ctx context.Context, repo *gitstore.Repo, p string, base, cur gitstore.OID, prev *fileDelta) (*fileDelta, error) {
	d := &fileDelta{base: base, cur: cur}
	if langOf(p) == "" {
		return d, nil
	}
	var err error
	if d.baseFile, err = g.files.get(ctx, repo, p, base); err != nil {
		return nil, err
	}
	nf, err := g.files.get(ctx, repo, p, cur)
	if err != nil {
		return nil, err
	}
	d.syms = nf
	if nf != nil && nf.Err != "" {
		// Keep what the file was before it stopped parsing: the session's
		// previous version, or the base.
		d.parseErr = nf.Err
		d.syms = d.baseFile
		if prev != nil {
			d.syms = prev.syms
		}
	}
	switch {
	case d.baseFile != nil && d.baseFile.Err != "":
		// The base does not parse: which symbols changed is unknown.
	case d.syms == nil || d.syms.Parsed():
		d.changes = DiffSymbols(d.baseFile, d.syms)
	}
	return d, nil
}

// ErrUnknownSession: the graph holds no delta for the session, because it
// made no change since the graph started or is no longer live.
var ErrUnknownSession = errors.New("session unknown to the graph")

// FileSummary is what changed in one file: its status and, for a language
// the index parses, the symbols added, modified and removed.
type FileSummary struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Lang   string `json:"lang,omitempty"`
	SymbolChanges
	// ParseError says why the file's new (or base) version could not be
	// parsed; the symbol changes are then those of the last version that
	// parsed, or none.
	ParseError string `json:"parse_error,omitempty"`
}

// Delta returns the live session's changes against its base, by path.
func (g *Graph) Delta(id uuid.UUID) ([]FileSummary, error) {
	rs, st := g.session(id)
	if st == nil {
		return nil, fmt.Errorf("delta of %s: %w", id, ErrUnknownSession)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]FileSummary, 0, len(st.files))
	for p, d := range st.files {
		out = append(out, d.summary(p))
	}
	slices.SortFunc(out, func(a, b FileSummary) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (d *fileDelta) summary(p string) FileSummary {
	fs := FileSummary{Path: p, Status: d.status(), Lang: langOf(p), SymbolChanges: d.changes, ParseError: d.parseErr}
	if d.baseFile != nil && d.baseFile.Err != "" {
		fs.ParseError = "base: " + d.baseFile.Err
	}
	return fs
}

// SessionFile is a file as a live session sees it.
type SessionFile struct {
	Path string
	// File holds the symbols of the session's version of the file, or of
	// the last version that parsed when ParseError is set; nil when the
	// session has no file at Path.
	File *File
	// Changed says whether the session changed the file; Changes and
	// ParseError are set only then.
	Changed    bool
	Changes    SymbolChanges
	ParseError string
}

// Lookup returns the file at path p of a live session's view: from the
// session's delta when it changed p, else from its base index.
func (g *Graph) Lookup(ctx context.Context, id uuid.UUID, p string) (SessionFile, error) {
	rs, st := g.session(id)
	if st == nil {
		return SessionFile{}, fmt.Errorf("lookup %q in %s: %w", p, id, ErrUnknownSession)
	}
	rs.mu.Lock()
	d := st.files[p]
	repo, baseTree := st.repo, st.baseTree
	rs.mu.Unlock()
	if d != nil {
		f := d.syms
		if langOf(p) == "" && !d.cur.IsZero() {
			f = &File{Blob: d.cur}
		}
		return SessionFile{Path: p, File: f, Changed: true, Changes: d.changes, ParseError: d.parseErr}, nil
	}
	f, err := g.Base(repo, baseTree).File(ctx, p)
	if err != nil {
		return SessionFile{}, err
	}
	return SessionFile{Path: p, File: f}, nil
}

func (g *Graph) session(id uuid.UUID) (*repoState, *sessionState) {
	g.mu.Lock()
	rs := g.where[id]
	g.mu.Unlock()
	if rs == nil {
		return nil, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := rs.sessions[id]
	return rs, st
}
