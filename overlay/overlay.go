package overlay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Base is the read-only view of the base tree an overlay resolves through.
// *gitstore.TreeView satisfies it.
type Base interface {
	// Lookup returns the entry at path ("" is the root); errors.Is(err,
	// gitstore.ErrNotFound) when there is none.
	Lookup(ctx context.Context, path string) (gitstore.Entry, error)
	// List calls fn for the entries strictly under the directory prefix
	// ("" is the root) in git order, directories (ModeDir) before their
	// children; recursive=false lists one level.
	List(ctx context.Context, prefix string, recursive bool, fn func(gitstore.Entry) error) error
	// ReadBlob returns a blob's content.
	ReadBlob(ctx context.Context, id gitstore.OID) ([]byte, error)
}

// TreeBuilder writes a new tree from a base tree and a set of changes.
// *gitstore.Repo satisfies it.
type TreeBuilder interface {
	BuildTree(ctx context.Context, base gitstore.OID, changes []gitstore.Change) (gitstore.OID, error)
}

// Status says how a path in the merged view relates to the base.
type Status uint8

// Statuses. Unchanged only appears in views (Stat, List), never as an
// overlay entry.
const (
	Unchanged Status = iota
	Added
	Modified
	Deleted
)

var statusNames = [...]string{"unchanged", "added", "modified", "deleted"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", s)
}

// MarshalText implements encoding.TextMarshaler with the API's names.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown status %q", b)
}

// Entry is one of the overlay's own entries. For Added and Modified, Mode
// and OID are the new blob; for Deleted (a whiteout) they are what the
// whiteout hides in the base: ModeDir and the tree id for a directory.
type Entry struct {
	Path   string
	Status Status
	Mode   gitstore.Mode
	OID    gitstore.OID
	// Size is the content size the caller reported with PutSized (0 when
	// unknown); ContentBytes sums it.
	Size int64
}

// Node is one path in the merged view, as Stat and List report it. A
// directory whose content the overlay changes has a zero OID: its tree
// does not exist until the overlay is built.
type Node struct {
	Path   string
	Mode   gitstore.Mode
	OID    gitstore.OID
	Status Status
}

// IsDir reports whether n is a directory.
func (n Node) IsDir() bool { return n.Mode.IsDir() }

// Options are per-overlay policies.
type Options struct {
	// AllowCaseCollisions turns the caseCollision rule off.
	AllowCaseCollisions bool
}

// Overlay is a session's set of changes over a base view. See the package
// documentation for its invariants; it is not safe for concurrent use.
type Overlay struct {
	base Base
	opts Options

	entries map[string]Entry
	// below and live count, for every directory (including the root ""),
	// the entries strictly under it and the added or modified ones among
	// them. They answer "does anything sit under d" without a scan.
	below map[string]int
	live  map[string]int
	// direct counts, for every directory, the entries directly in it.
	direct map[string]int
	bytes  int64
	// sorted holds the entry keys in git order (directories as "name/")
	// as of the last keys() call; added and dropped are the keys set and
	// remove changed since (added ones not in sorted yet, dropped ones
	// still in it), merged in by the next keys() call. So a run of n
	// writes costs one sort of what they added, not n inserts into the
	// middle of a slice (n² moves); nil sorted means "rebuild".
	sorted         []string
	added, dropped map[string]struct{}
	// undo records every change while an operation is in progress, so an
	// operation that fails halfway (a base read error) changes nothing.
	undo      []undoRecord
	recording bool
	// blobs reads the blobs the content rules check (nil: the base); see
	// ReadBlobsWith.
	blobs BlobReader
	// touched holds the paths whose entries changed since New, Restore or
	// Clone (see Touched).
	touched map[string]struct{}
	// kids and folds index the merged view's children by folded name for
	// the caseCollision rule (casefold.go); folds is shared with clones.
	kids  map[kidKey][]string
	folds *foldCache
	// frozen: Freeze made the overlay read-only; every change panics.
	frozen bool
}

// BlobReader reads a blob's content.
type BlobReader func(ctx context.Context, id gitstore.OID) ([]byte, error)

// ReadBlobsWith makes PutSized read the blobs the content rules check
// (.gitmodules, .gitattributes) through r instead of the base, so that a
// caller can write blobs it has queued but not yet stored; nil restores
// the base. Clone does not carry it over.
func (o *Overlay) ReadBlobsWith(r BlobReader) {
	o.mustThaw()
	o.blobs = r
}

// Freeze makes o read-only and returns it: a frozen overlay is safe for
// concurrent use by any number of readers, because nothing a read does
// changes it (the sorted keys are settled here, once), and every change
// panics. Clone gives a writable copy. A session publishes its overlay
// frozen after each mutation, so a read can take it under the session's
// lock and use it after letting the lock go.
func (o *Overlay) Freeze() *Overlay {
	o.keys()
	o.blobs = nil
	o.frozen = true
	return o
}

// Frozen reports whether Freeze made o read-only.
func (o *Overlay) Frozen() bool { return o.frozen }

// mustThaw panics on a change to a frozen overlay: such a change would
// race with its readers, a programming error no input can cause.
func (o *Overlay) mustThaw() {
	if o.frozen {
		panic("overlay: change to a frozen overlay (Clone it first)")
	}
}

type undoRecord struct {
	path string
	old  Entry
	had  bool
}

// New returns an empty overlay over base. A nil base is the empty tree.
func New(base Base, opts Options) *Overlay {
	if base == nil {
		base = emptyBase{}
	}
	return &Overlay{
		base:    base,
		opts:    opts,
		entries: make(map[string]Entry),
		below:   make(map[string]int),
		live:    make(map[string]int),
		direct:  make(map[string]int),
		touched: make(map[string]struct{}),
		kids:    make(map[kidKey][]string),
		folds:   &foldCache{dirs: make(map[string]*baseDir)},
	}
}

// Restore returns an overlay holding entries as they were saved (from the
// session store, or a checkpoint's diff). It checks each entry's path and
// status but trusts that the set came from an overlay over the same base.
func Restore(base Base, opts Options, entries []Entry) (*Overlay, error) {
	o := New(base, opts)
	for _, e := range entries {
		switch e.Status {
		case Added, Modified:
			if err := ValidatePath(e.Path); err != nil {
				return nil, err
			}
			if err := ValidateMode(e.Path, e.Mode); err != nil {
				return nil, err
			}
		case Deleted:
			// A whiteout sits on a base path, which may have a name git
			// allows and the write rules refuse.
			if err := validName(e.Path); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("restore %q: bad status %s", e.Path, e.Status)
		}
		if _, dup := o.entries[e.Path]; dup {
			return nil, fmt.Errorf("restore %q: duplicate entry", e.Path)
		}
		o.set(e)
	}
	clear(o.touched)
	return o, nil
}

// Clone returns an independent, writable copy sharing the base (for fork,
// dry runs and all-or-nothing batches: apply to the clone, then keep it or
// drop it). Cloning a frozen overlay only reads it.
func (o *Overlay) Clone() *Overlay {
	c := New(o.base, o.opts)
	// maps.Clone copies the tables as they are, without hashing each key
	// again: the bulk of a mutation's fixed cost on a large overlay.
	c.entries = maps.Clone(o.entries)
	c.below = maps.Clone(o.below)
	c.live = maps.Clone(o.live)
	c.direct = maps.Clone(o.direct)
	c.bytes = o.bytes
	c.sorted = slices.Clone(o.keys())
	c.kids = maps.Clone(o.kids) // addKids never appends in place
	c.folds = o.folds
	return c
}

// Touched returns the paths whose entries changed (added, replaced or
// removed) since the overlay was made by New, Restore or Clone, in no
// particular order; a path may have changed back. With the overlay it
// was cloned from, it is what an operation on the clone changed, found
// without comparing every entry.
func (o *Overlay) Touched() []string {
	return slices.Collect(maps.Keys(o.touched))
}

// Base returns the view the overlay resolves through.
func (o *Overlay) Base() Base { return o.base }

// Len is the number of entries.
func (o *Overlay) Len() int { return len(o.entries) }

// ContentBytes is the sum of the sizes reported with PutSized.
func (o *Overlay) ContentBytes() int64 { return o.bytes }

// Get returns the overlay's own entry at p, if any.
func (o *Overlay) Get(p string) (Entry, bool) {
	e, ok := o.entries[p]
	return e, ok
}

// Entries returns every entry in git order.
func (o *Overlay) Entries() []Entry {
	keys := o.keys()
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = o.entries[strings.TrimSuffix(k, "/")]
	}
	return out
}

// Changes returns the entries as tree-builder changes, in git order: a
// whiteout deletes its path (a whole subtree for a directory), the others
// put their blob.
func (o *Overlay) Changes() []gitstore.Change {
	es := o.Entries()
	out := make([]gitstore.Change, len(es))
	for i, e := range es {
		if e.Status == Deleted {
			out[i] = gitstore.Change{Path: e.Path, Delete: true}
		} else {
			out[i] = gitstore.Change{Path: e.Path, Mode: e.Mode, OID: e.OID}
		}
	}
	return out
}

// BuildTree writes the tree of base tree baseTree with the overlay applied
// and returns its id; with no entries it is baseTree itself.
func (o *Overlay) BuildTree(ctx context.Context, b TreeBuilder, baseTree gitstore.OID) (gitstore.OID, error) {
	if len(o.entries) == 0 {
		return baseTree, nil
	}
	id, err := b.BuildTree(ctx, baseTree, o.Changes())
	if err != nil {
		return gitstore.ZeroOID, fmt.Errorf("build overlay tree: %w", err)
	}
	return id, nil
}

// Stat returns the node at p in the merged view ("" is the root).
func (o *Overlay) Stat(ctx context.Context, p string) (Node, error) {
	if p == "" {
		if len(o.entries) > 0 {
			return Node{Mode: gitstore.ModeDir, Status: Modified}, nil
		}
		b, err := o.base.Lookup(ctx, "")
		if err != nil {
			return Node{}, fmt.Errorf("stat root: %w", err)
		}
		return Node{Mode: gitstore.ModeDir, OID: b.OID, Status: Unchanged}, nil
	}
	if e, ok := o.entries[p]; ok {
		switch {
		case e.Status != Deleted:
			return Node{Path: p, Mode: e.Mode, OID: e.OID, Status: e.Status}, nil
		case o.live[p] > 0:
			// A deleted path recreated as a directory.
			st := Added
			if e.Mode.IsDir() {
				st = Modified
			}
			return Node{Path: p, Mode: gitstore.ModeDir, Status: st}, nil
		}
		return Node{}, notFound(p)
	}
	if _, _, ok := o.ancestorEntry(p); ok {
		// Under a whiteout (or a file): only recreated directories exist.
		if o.live[p] == 0 {
			return Node{}, notFound(p)
		}
		return o.changedDir(ctx, p)
	}
	if o.live[p] > 0 {
		return o.changedDir(ctx, p)
	}
	b, found, err := o.rawBase(ctx, p)
	if err != nil {
		return Node{}, err
	}
	if !found {
		return Node{}, notFound(p)
	}
	if b.Mode.IsDir() && o.below[p] > 0 {
		return Node{Path: p, Mode: gitstore.ModeDir, Status: Modified}, nil
	}
	return Node{Path: p, Mode: b.Mode, OID: b.OID, Status: Unchanged}, nil
}

// changedDir is the node of a directory that holds added or modified
// entries: modified if the base has a directory there, else added.
func (o *Overlay) changedDir(ctx context.Context, p string) (Node, error) {
	st := Added
	b, found, err := o.rawBase(ctx, p)
	if err != nil {
		return Node{}, err
	}
	if found && b.Mode.IsDir() {
		st = Modified
	}
	return Node{Path: p, Mode: gitstore.ModeDir, Status: st}, nil
}

// Read returns the content of the file at p in the merged view.
func (o *Overlay) Read(ctx context.Context, p string) ([]byte, error) {
	n, err := o.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	if !n.Mode.IsBlob() {
		return nil, fmt.Errorf("read %q: %w", p, ErrIsDir)
	}
	data, err := o.base.ReadBlob(ctx, n.OID)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	return data, nil
}

// Put writes a blob with mode m at p; see PutSized.
func (o *Overlay) Put(ctx context.Context, p string, id gitstore.OID, m gitstore.Mode) error {
	return o.PutSized(ctx, p, id, m, 0)
}

// PutSized writes a blob of size bytes with mode m at p, after CheckPut
// and ValidateSymlinkTarget accept it and, for the files they govern, the
// content rules accept the blob (CheckContent). The blob must already be
// in the repository (or be readable through ReadBlobsWith). The entry is
// added or modified relative to the base; writing exactly the base's blob
// and mode removes the entry instead. A rejected write changes nothing.
func (o *Overlay) PutSized(ctx context.Context, p string, id gitstore.OID, m gitstore.Mode, size int64) (err error) {
	raw, inBase, err := o.rawBase(ctx, p)
	if err != nil {
		return err
	}
	revert := inBase && raw.Mode == m && raw.OID == id
	if revert && ValidatePath(p) != nil && validName(p) == nil {
		// The base's own content back at a base path whose name the
		// write rules refuse (a rollback, a rebase): nothing new is
		// written, so only the checks of the merged view apply.
		if err := o.checkPutView(ctx, p, m); err != nil {
			return err
		}
	} else if err := o.CheckPut(ctx, p, m); err != nil {
		return err
	}
	if err := ValidateSymlinkTarget(p, m, id); err != nil {
		return err
	}
	if !revert && ContentChecked(p, m) {
		read := o.blobs
		if read == nil {
			read = o.base.ReadBlob
		}
		data, err := read(ctx, id)
		if err != nil {
			return fmt.Errorf("read %q for its content rules: %w", p, err)
		}
		if err := CheckContent(p, m, data); err != nil {
			return err
		}
	}
	o.begin()
	defer o.end(&err)
	// Nothing can remain below a file; leftovers would be whiteouts of a
	// base directory the merged view no longer has.
	o.removeUnder(p)
	a, _, shadowed := o.ancestorEntry(p)
	if revert {
		o.remove(p)
		if shadowed {
			// The base file is hidden by a deleted ancestor: reopen the
			// path down to it so the base shows through.
			return o.unshadow(ctx, a, p)
		}
		return nil
	}
	st := Added
	if inBase && !raw.Mode.IsDir() {
		st = Modified
	}
	o.set(Entry{Path: p, Status: st, Mode: m, OID: id, Size: size})
	return nil
}

// unshadow replaces the whiteout at directory a (an ancestor of p) by
// whiteouts of every base entry on the way down to p except the ones on
// the path, so that the base's p becomes visible while everything else a
// hid stays hidden. It costs one directory listing per level.
func (o *Overlay) unshadow(ctx context.Context, a, p string) error {
	for cur := a; cur != p; {
		o.remove(cur)
		next := p
		if i := strings.IndexByte(p[len(cur)+1:], '/'); i >= 0 {
			next = p[:len(cur)+1+i]
		}
		var plan []gitstore.Entry
		err := o.base.List(ctx, cur, false, func(c gitstore.Entry) error {
			if c.Path != next {
				plan = append(plan, c)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %q: %w", cur, err)
		}
		for _, c := range plan {
			if e, ok := o.entries[c.Path]; ok {
				if e.Status != Deleted && e.Mode == c.Mode && e.OID == c.OID {
					o.remove(c.Path)
				}
				continue
			}
			o.set(Entry{Path: c.Path, Status: Deleted, Mode: c.Mode, OID: c.OID})
		}
		cur = next
	}
	return nil
}

// Delete removes the file or directory at p from the merged view. A
// directory becomes one whiteout hiding its whole subtree, replacing every
// entry under it. Deleting a submodule (gitlink), or a directory holding
// one, is rejected with badFilemode: gitlinks are read-only.
func (o *Overlay) Delete(ctx context.Context, p string) (err error) {
	if err := o.CheckExisting(ctx, p); err != nil {
		return err
	}
	n, err := o.Stat(ctx, p)
	if err != nil {
		return err
	}
	switch {
	case n.Mode == gitstore.ModeGitlink:
		return pathErr(RuleBadFilemode, p, "%q is a submodule (gitlink), which is read-only", p)
	case n.IsDir():
		if err := o.checkNoGitlinks(ctx, p); err != nil {
			return err
		}
	}
	raw, inBase, err := o.rawBase(ctx, p)
	if err != nil {
		return err
	}
	o.begin()
	defer o.end(&err)
	o.remove(p)
	o.removeUnder(p)
	if _, _, shadowed := o.ancestorEntry(p); inBase && !shadowed {
		o.set(Entry{Path: p, Status: Deleted, Mode: raw.Mode, OID: raw.OID})
	}
	return o.collapseUp(ctx, parentDir(p))
}

func (o *Overlay) checkNoGitlinks(ctx context.Context, p string) error {
	var sub string
	errFound := errors.New("found")
	err := o.List(ctx, ListOptions{Prefix: p, Recursive: true}, func(n Node) error {
		if n.Mode == gitstore.ModeGitlink {
			sub = n.Path
			return errFound
		}
		return nil
	})
	switch {
	case errors.Is(err, errFound):
		return pathErr(RuleBadFilemode, p, "directory holds submodule %q (gitlink), which is read-only", sub)
	case err != nil:
		return fmt.Errorf("delete %q: %w", p, err)
	}
	return nil
}

// collapseUp restores the no-empty-directories invariant after a removal
// below d: walking up, a base directory left with nothing visible becomes
// one whiteout.
func (o *Overlay) collapseUp(ctx context.Context, d string) error {
	for ; d != ""; d = parentDir(d) {
		if o.live[d] > 0 {
			return nil
		}
		if _, ok := o.entries[d]; ok {
			continue // a whiteout with nothing recreated under it
		}
		if _, _, ok := o.ancestorEntry(d); ok {
			continue
		}
		raw, found, err := o.rawBase(ctx, d)
		if err != nil {
			return err
		}
		if !found || !raw.Mode.IsDir() {
			continue
		}
		visible, err := o.anyBaseChildVisible(ctx, d)
		if err != nil || visible {
			return err
		}
		o.removeUnder(d)
		o.set(Entry{Path: d, Status: Deleted, Mode: raw.Mode, OID: raw.OID})
	}
	return nil
}

// anyBaseChildVisible reports whether some base child of the base-visible
// directory d has no entry of its own. Directories below d are already
// collapsed, so such a child is not empty. It is called when nothing
// live is below d, so every entry directly in d is a whiteout of one of
// its base children (a whiteout only sits on a base path): a child has
// no entry exactly when d has more base children than entries. Counting
// instead of listing d until a child without an entry turns up keeps a
// run of deletes in one directory linear.
func (o *Overlay) anyBaseChildVisible(ctx context.Context, d string) (bool, error) {
	bd, err := o.baseDir(ctx, d)
	if err != nil {
		return false, err
	}
	return bd.n > o.direct[d], nil
}

// ancestorEntry returns the deepest entry at a strict ancestor of p.
func (o *Overlay) ancestorEntry(p string) (string, Entry, bool) {
	if len(o.entries) == 0 {
		return "", Entry{}, false
	}
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			if e, ok := o.entries[p[:i]]; ok {
				return p[:i], e, true
			}
		}
	}
	return "", Entry{}, false
}

// rawBase looks p up in the base alone; found is false when it is absent.
func (o *Overlay) rawBase(ctx context.Context, p string) (gitstore.Entry, bool, error) {
	b, err := o.base.Lookup(ctx, p)
	switch {
	case errors.Is(err, gitstore.ErrNotFound):
		return gitstore.Entry{}, false, nil
	case err != nil:
		return gitstore.Entry{}, false, fmt.Errorf("base lookup %q: %w", p, err)
	}
	return b, true, nil
}

func notFound(p string) error { return fmt.Errorf("%q: %w", p, ErrNotFound) }

// set inserts or replaces an entry, keeping the counters and the sorted
// cache in step.
func (o *Overlay) set(e Entry) {
	o.mustThaw()
	old, had := o.entries[e.Path]
	o.record(e.Path, old, had)
	o.touched[e.Path] = struct{}{}
	if had {
		o.account(old, -1)
		if old.Mode.IsDir() != e.Mode.IsDir() {
			o.dropKey(gitKey(e.Path, old.Mode))
			o.addKey(gitKey(e.Path, e.Mode))
		}
	} else {
		o.addKey(gitKey(e.Path, e.Mode))
	}
	o.entries[e.Path] = e
	o.account(e, 1)
}

func (o *Overlay) remove(p string) {
	o.mustThaw()
	old, had := o.entries[p]
	if !had {
		return
	}
	o.record(p, old, had)
	o.touched[p] = struct{}{}
	o.account(old, -1)
	delete(o.entries, p)
	o.dropKey(gitKey(p, old.Mode))
}

// removeUnder removes every entry strictly under p; the next keys()
// drops their keys in the same pass that merges any added ones.
func (o *Overlay) removeUnder(p string) {
	if o.below[p] == 0 {
		return
	}
	o.mustThaw()
	ks := o.keys()
	lo, hi := o.keyRange(p)
	if lo < hi && ks[lo] == p+"/" {
		lo++ // p's own whiteout
	}
	for _, k := range ks[lo:hi] {
		q := strings.TrimSuffix(k, "/")
		old := o.entries[q]
		o.record(q, old, true)
		o.touched[q] = struct{}{}
		o.account(old, -1)
		delete(o.entries, q)
		o.dropKey(k)
	}
}

func (o *Overlay) addKey(k string) {
	if o.sorted == nil {
		return // rebuilt on next use
	}
	if _, ok := o.dropped[k]; ok {
		delete(o.dropped, k) // still in sorted
		return
	}
	if _, found := slices.BinarySearch(o.sorted, k); found {
		return
	}
	if o.added == nil {
		o.added = map[string]struct{}{}
	}
	o.added[k] = struct{}{}
}

func (o *Overlay) dropKey(k string) {
	if o.sorted == nil {
		return
	}
	if _, ok := o.added[k]; ok {
		delete(o.added, k) // never reached sorted
		return
	}
	if _, found := slices.BinarySearch(o.sorted, k); found {
		if o.dropped == nil {
			o.dropped = map[string]struct{}{}
		}
		o.dropped[k] = struct{}{}
	}
}

// keyRange returns the bounds in keys() of the keys under directory d:
// every key with prefix d+"/" (all keys for the root).
func (o *Overlay) keyRange(d string) (lo, hi int) {
	ks := o.keys()
	if d == "" {
		return 0, len(ks)
	}
	lo, _ = slices.BinarySearch(ks, d+"/")
	hi, _ = slices.BinarySearch(ks, d+"0") // '0' follows '/'
	return lo, hi
}

func (o *Overlay) account(e Entry, d int) {
	isLive := e.Status != Deleted
	bump := func(dir string) {
		if o.below[dir] += d; o.below[dir] == 0 {
			delete(o.below, dir)
		}
		if isLive {
			if o.live[dir] += d; o.live[dir] == 0 {
				delete(o.live, dir)
			}
		}
	}
	bump("")
	for i := 0; i < len(e.Path); i++ {
		if e.Path[i] == '/' {
			bump(e.Path[:i])
		}
	}
	if p := parentDir(e.Path); o.direct[p]+d == 0 {
		delete(o.direct, p)
	} else {
		o.direct[p] += d
	}
	if isLive {
		o.bytes += int64(d) * e.Size
		if d > 0 {
			o.addKids(e.Path)
		}
	}
}

func (o *Overlay) record(p string, old Entry, had bool) {
	if o.recording {
		o.undo = append(o.undo, undoRecord{path: p, old: old, had: had})
	}
}

// begin starts recording changes; end rolls them back if *errp is set.
func (o *Overlay) begin() {
	o.mustThaw()
	o.recording = true
	o.undo = o.undo[:0]
}

func (o *Overlay) end(errp *error) {
	o.recording = false
	if *errp != nil {
		for i := len(o.undo) - 1; i >= 0; i-- {
			u := o.undo[i]
			if cur, ok := o.entries[u.path]; ok {
				o.account(cur, -1)
				delete(o.entries, u.path)
			}
			if u.had {
				o.entries[u.path] = u.old
				o.account(u.old, 1)
			}
		}
		o.sorted = nil
		clear(o.added)
		clear(o.dropped)
	}
	o.undo = o.undo[:0]
}

// keys returns the entry keys in git order: paths, with "/" appended for
// directory whiteouts, sorted bytewise.
func (o *Overlay) keys() []string {
	switch {
	case o.sorted == nil:
		ks := make([]string, 0, len(o.entries))
		for p, e := range o.entries {
			ks = append(ks, gitKey(p, e.Mode))
		}
		sort.Strings(ks)
		o.sorted = ks
	case len(o.added) > 0 || len(o.dropped) > 0:
		add := slices.Sorted(maps.Keys(o.added))
		ks := make([]string, 0, len(o.sorted)-len(o.dropped)+len(add))
		i := 0
		for _, k := range o.sorted {
			if _, gone := o.dropped[k]; gone {
				continue
			}
			for ; i < len(add) && add[i] < k; i++ {
				ks = append(ks, add[i])
			}
			ks = append(ks, k)
		}
		o.sorted = append(ks, add[i:]...)
		// Cleared only when used: clearing writes the map even when it
		// is empty, and a frozen overlay's readers must write nothing.
		clear(o.added)
		clear(o.dropped)
	}
	return o.sorted
}

func gitKey(p string, m gitstore.Mode) string {
	if m.IsDir() {
		return p + "/"
	}
	return p
}

// emptyBase is the base of an overlay over no tree at all.
type emptyBase struct{}

func (emptyBase) Lookup(_ context.Context, p string) (gitstore.Entry, error) {
	if p == "" {
		return gitstore.Entry{Mode: gitstore.ModeDir}, nil
	}
	return gitstore.Entry{}, fmt.Errorf("%q: %w", p, gitstore.ErrNotFound)
}

func (emptyBase) List(context.Context, string, bool, func(gitstore.Entry) error) error {
	return nil
}

func (emptyBase) ReadBlob(_ context.Context, id gitstore.OID) ([]byte, error) {
	return nil, fmt.Errorf("blob %s: %w", id, gitstore.ErrNotFound)
}

// ChangeAt returns the tree-builder change that makes path p of a tree
// show what the merged view shows there: a delete when nothing is there, a
// blob put for a file, or a subtree put (ModeDir) for a directory, whose
// tree it builds with b from the base subtree and the entries below p.
// Applying ChangeAt for every path an operation touched, to the tree of
// the view before the operation, gives the tree of the view after it,
// re-encoding only the directories on those paths.
func (o *Overlay) ChangeAt(ctx context.Context, b TreeBuilder, p string) (gitstore.Change, error) {
	n, err := o.Stat(ctx, p)
	switch {
	case errors.Is(err, ErrNotFound):
		return gitstore.Change{Path: p, Delete: true}, nil
	case err != nil:
		return gitstore.Change{}, err
	case !n.IsDir() || !n.OID.IsZero():
		// A file, or a directory the overlay leaves as the base has it.
		return gitstore.Change{Path: p, Mode: n.Mode, OID: n.OID}, nil
	}
	// A directory with changes below it: the base subtree, unless a
	// whiteout (or a file entry) at p or above hides it, plus the entries
	// below p.
	var base gitstore.OID
	_, atP := o.entries[p]
	if _, _, hidden := o.ancestorEntry(p); !atP && !hidden {
		if be, found, err := o.rawBase(ctx, p); err != nil {
			return gitstore.Change{}, err
		} else if found && be.Mode.IsDir() {
			base = be.OID
		}
	}
	var rel []gitstore.Change
	lo, hi := o.keyRange(p)
	for _, k := range o.keys()[lo:hi] {
		e := o.entries[strings.TrimSuffix(k, "/")]
		if e.Path == p {
			continue // p's own whiteout: the base is already left out
		}
		q := strings.TrimPrefix(e.Path, p+"/")
		if e.Status == Deleted {
			rel = append(rel, gitstore.Change{Path: q, Delete: true})
		} else {
			rel = append(rel, gitstore.Change{Path: q, Mode: e.Mode, OID: e.OID})
		}
	}
	id, err := b.BuildTree(ctx, base, rel)
	if err != nil {
		return gitstore.Change{}, fmt.Errorf("build %q: %w", p, err)
	}
	return gitstore.Change{Path: p, Mode: gitstore.ModeDir, OID: id}, nil
}
