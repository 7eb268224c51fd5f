package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
)

// Source says where a file's content comes from.
type Source string

// Sources.
const (
	SourceOverlay Source = "overlay"
	SourceBase    Source = "base"
)

// FileInfo describes one path of a session's view.
type FileInfo struct {
	Path   string         `json:"path"`
	Type   string         `json:"type"` // "file", "symlink", "dir", "submodule"
	Mode   gitstore.Mode  `json:"mode"`
	OID    gitstore.OID   `json:"oid"`
	Size   int64          `json:"size"`
	Status overlay.Status `json:"status"`
	Source Source         `json:"source,omitempty"`
}

func typeOf(m gitstore.Mode) string {
	switch m {
	case gitstore.ModeDir:
		return "dir"
	case gitstore.ModeSymlink:
		return "symlink"
	case gitstore.ModeGitlink:
		return "submodule"
	}
	return "file"
}

// notFound turns the overlay's (gitstore's) not-found into the engine's,
// keeping both in the chain and the overlay's message as it is (which
// already says "not found").
func notFound(err error) error {
	if errors.Is(err, overlay.ErrNotFound) && !errors.Is(err, record.ErrNotFound) {
		return &notFoundError{err}
	}
	return err
}

// notFoundError is an overlay not-found seen as the engine's record.ErrNotFound.
type notFoundError struct{ err error }

func (e *notFoundError) Error() string   { return e.err.Error() }
func (e *notFoundError) Unwrap() []error { return []error{record.ErrNotFound, e.err} }

func (ls *live) info(ctx context.Context, n overlay.Node) (FileInfo, error) {
	return infoOf(ctx, ls.repo, n)
}

func infoOf(ctx context.Context, repo *gitstore.Repo, n overlay.Node) (FileInfo, error) {
	var size int64
	if n.Mode.IsBlob() {
		var err error
		if size, err = repo.BlobSize(ctx, n.OID); err != nil {
			return FileInfo{}, err
		}
	}
	return infoSized(n, size), nil
}

// infoSized is n's FileInfo for a blob of size bytes (ignored for other
// modes).
func infoSized(n overlay.Node, size int64) FileInfo {
	fi := FileInfo{Path: n.Path, Type: typeOf(n.Mode), Mode: n.Mode, OID: n.OID, Status: n.Status, Source: SourceBase}
	if n.Status == overlay.Added || n.Status == overlay.Modified {
		fi.Source = SourceOverlay
	}
	if n.Mode.IsBlob() {
		fi.Size = size
	}
	return fi
}

// view is a loaded session as one read sees it: what reads need, taken
// under the session's lock and used after letting it go (as etcd's
// ConcurrentReadTx). Its overlay is frozen and its policy and repository
// never change, so a read's blob I/O waits for no write, and no write
// waits for it: the read sees the session as of the last mutation
// committed before it began.
//
// A view counts as a read in flight until release, which every caller of
// snapshot defers: the session stays loaded meanwhile, so what the read
// records lands in the read set the session saves.
type view struct {
	ls     *live
	ov     *overlay.Overlay
	policy *policy
	repo   *gitstore.Repo
	reads  *readSet
}

// snapshot returns session id's current view, loading the session if it
// is not in memory. The session's lock is held only while the view is
// taken; the caller releases the view when done.
func (m *Manager) snapshot(ctx context.Context, id uuid.UUID) (view, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return view{}, err
	}
	v := view{ls: ls, ov: ls.ov, policy: ls.policy, repo: ls.repo, reads: ls.reads}
	v.reads.begin()
	ls.unlock()
	return v, nil
}

// searchFileHook, when set (by tests), runs before a search reads each
// file.
var searchFileHook func(path string)

func (v view) info(ctx context.Context, n overlay.Node) (FileInfo, error) {
	return infoOf(ctx, v.repo, n)
}

// release ends the read. When a finished session's unload waited for it,
// it leaves memory now if its lock is free and nothing is left to save
// (released does no I/O), else the janitor unloads it.
func (v view) release() {
	if !v.reads.end() {
		return
	}
	ls := v.ls
	if !ls.mu.TryLock() {
		ls.mem.handOver(ls)
		return
	}
	ls.unlock()
}

// openRead is the session's view for reading p, with its policy applied;
// the caller releases it.
func (m *Manager) openRead(ctx context.Context, id uuid.UUID, p string) (view, error) {
	v, err := m.snapshot(ctx, id)
	if err != nil {
		return view{}, err
	}
	// A base file whose name the write rules refuse is still readable.
	if err := v.ov.CheckExisting(ctx, p); err != nil {
		v.release()
		return view{}, err
	}
	if err := v.policy.checkRead(p); err != nil {
		v.release()
		return view{}, err
	}
	return v, nil
}

// Stat describes the file or directory at p.
func (m *Manager) Stat(ctx context.Context, id uuid.UUID, p string) (FileInfo, error) {
	v, err := m.openRead(ctx, id, p)
	if err != nil {
		return FileInfo{}, err
	}
	defer v.release()
	n, err := v.ov.Stat(ctx, p)
	if err != nil {
		return FileInfo{}, notFound(err)
	}
	return v.info(ctx, n)
}

// Read returns the content of the file at p: all of it when n < 0, else up
// to n bytes from off. A read that falls through to the base records the
// base blob in the session's read set.
func (m *Manager) Read(ctx context.Context, id uuid.UUID, p string, off, n int64) ([]byte, FileInfo, error) {
	v, err := m.openRead(ctx, id, p)
	if err != nil {
		return nil, FileInfo{}, err
	}
	defer v.release()
	node, err := v.ov.Stat(ctx, p)
	if err != nil {
		return nil, FileInfo{}, notFound(err)
	}
	if !node.Mode.IsBlob() {
		return nil, FileInfo{}, fmt.Errorf("read %q: %w: %w", p, record.ErrInvalid, overlay.ErrIsDir)
	}
	if off < 0 {
		return nil, FileInfo{}, fmt.Errorf("%w: read %q: negative offset %d", record.ErrInvalid, p, off)
	}
	// One read of the blob gives both the content and its size (a
	// separate size lookup first was a second object lookup per read).
	data, err := v.repo.ReadBlob(ctx, node.OID)
	if err != nil {
		return nil, FileInfo{}, err
	}
	fi := infoSized(node, int64(len(data)))
	switch size := int64(len(data)); {
	case off >= size:
		data = []byte{}
	case n >= 0 && off+n < size:
		data = data[off : off+n]
	default:
		data = data[off:]
	}
	if node.Status == overlay.Unchanged {
		v.reads.record(p, node.OID)
	}
	return data, fi, nil
}

// WriteOptions qualify a write.
type WriteOptions struct {
	// Mode of the file; zero keeps the mode of the file it replaces, or
	// 100644 for a new one.
	Mode gitstore.Mode
	// IfMatch writes only over this version (blob id) of the file.
	IfMatch *gitstore.OID
	// IfNoneMatch writes only when the file does not exist.
	IfNoneMatch bool
	// IfExists writes only over an existing file, whatever its version
	// (HTTP's If-Match: *).
	IfExists bool
	// Actor is who did it, for the mutation log; the session's agent when
	// empty.
	Actor string
}

func actorOf(ls *live, actor string) string {
	if actor != "" {
		return actor
	}
	return ls.meta.AgentID
}

// openWrite validates the paths and takes the session for a mutation
// that writes them.
func (m *Manager) openWrite(ctx context.Context, id uuid.UUID, paths ...string) (*live, error) {
	return m.openEdit(ctx, id, nil, paths)
}

// openEdit validates the paths and takes the session for a mutation that
// reads reads (the source of a copy) and writes writes; the policy is
// checked for each before anything runs.
func (m *Manager) openEdit(ctx context.Context, id uuid.UUID, reads, writes []string) (*live, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return nil, err
	}
	// A base path whose name the write rules refuse may be read, deleted
	// or moved away from; writing it is refused by the overlay (CheckPut).
	for _, p := range append(slices.Clip(reads), writes...) {
		if err := ls.ov.CheckExisting(ctx, p); err != nil {
			ls.unlock()
			return nil, err
		}
	}
	for _, p := range reads {
		if err := ls.policy.checkRead(p); err != nil {
			ls.unlock()
			return nil, err
		}
	}
	for _, p := range writes {
		if err := ls.policy.checkWrite(p); err != nil {
			ls.unlock()
			return nil, err
		}
	}
	return ls, nil
}

// Write writes data at p.
func (m *Manager) Write(ctx context.Context, id uuid.UUID, p string, data []byte, opts WriteOptions) (FileInfo, MutationRecord, error) {
	if int64(len(data)) > m.limits.MaxFileBytes {
		return FileInfo{}, MutationRecord{}, fmt.Errorf("%w: %q is %d bytes, the limit is %d", ErrTooLarge, p, len(data), m.limits.MaxFileBytes)
	}
	ls, err := m.openWrite(ctx, id, p)
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	defer ls.unlock()
	rec, _, err := m.recorder.mutate(ctx, ls, OpWrite, actorOf(ls, opts.Actor), false, func(mu *draft) error {
		return ls.put(ctx, mu, p, func([]byte) []byte { return data }, opts)
	})
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	n, err := ls.ov.Stat(ctx, p)
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	fi, err := ls.info(ctx, n)
	return fi, rec, err
}

// Append adds data at the end of the file at p (creating it).
func (m *Manager) Append(ctx context.Context, id uuid.UUID, p string, data []byte, opts WriteOptions) (FileInfo, MutationRecord, error) {
	ls, err := m.openWrite(ctx, id, p)
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	defer ls.unlock()
	rec, _, err := m.recorder.mutate(ctx, ls, OpAppend, actorOf(ls, opts.Actor), false, func(mu *draft) error {
		return ls.put(ctx, mu, p, func(old []byte) []byte {
			return append(append(make([]byte, 0, len(old)+len(data)), old...), data...)
		}, opts)
	})
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	n, err := ls.ov.Stat(ctx, p)
	if err != nil {
		return FileInfo{}, MutationRecord{}, err
	}
	fi, err := ls.info(ctx, n)
	return fi, rec, err
}

// checkSecretPath refuses a path that holds the value of one of the
// repository's secrets (rule secret), naming the secret and showing the
// path masked. Every path a change creates passes here: put's and a move
// or copy's targets.
func (mu *draft) checkSecretPath(p string) error {
	if name := mu.secrets.Find([]byte(p)); name != "" {
		return &overlay.PathError{Rule: RuleSecret, Path: mu.secrets.String(p), Message: "the path holds the value of secret " + name}
	}
	return nil
}

// put writes content(old) at p in the mutation's overlay, after checking
// the preconditions against the current file.
func (ls *live) put(ctx context.Context, mu *draft, p string, content func(old []byte) []byte, opts WriteOptions) error {
	if err := mu.checkSecretPath(p); err != nil {
		return err
	}
	var old []byte
	mode := opts.Mode
	cur, err := mu.ov.Stat(ctx, p)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, overlay.ErrNotFound):
		return err
	case exists && cur.IsDir():
		return &overlay.PathError{Rule: overlay.RuleFileDirectoryCollision, Path: p, Message: "a directory is there"}
	}
	if opts.IfNoneMatch && exists {
		return &PreconditionError{Path: p, Current: cur.OID.String()}
	}
	if opts.IfExists && !exists {
		return &PreconditionError{Path: p}
	}
	if opts.IfMatch != nil && (!exists || cur.OID != *opts.IfMatch) {
		pe := &PreconditionError{Path: p}
		if exists {
			pe.Current = cur.OID.String()
		}
		return pe
	}
	if exists {
		if mode == 0 {
			mode = cur.Mode
		}
		if old, err = mu.readBlob(ctx, cur.OID); err != nil {
			return err
		}
	}
	if mode == 0 {
		mode = gitstore.ModeFile
	}
	data := content(old)
	if int64(len(data)) > mu.limits.MaxFileBytes {
		return fmt.Errorf("%w: %q would be %d bytes, the limit is %d", ErrTooLarge, p, len(data), mu.limits.MaxFileBytes)
	}
	if name := mu.secrets.Find(data); name != "" {
		// The value is not named: the error goes back to the writer.
		return &overlay.PathError{Rule: RuleSecret, Path: p, Message: "the content holds the value of secret " + name}
	}
	id := mu.addBlob(data)
	if err := mu.ov.PutSized(ctx, p, id, mode, int64(len(data))); err != nil {
		return err
	}
	mu.touch(p)
	return nil
}

// Delete removes the file at p, or with recursive the directory at p and
// everything below it.
func (m *Manager) Delete(ctx context.Context, id uuid.UUID, p string, recursive bool, actor string) (MutationRecord, error) {
	return m.Remove(ctx, id, p, DeleteOptions{Recursive: recursive, Actor: actor})
}

// DeleteOptions qualify a delete.
type DeleteOptions struct {
	// Recursive deletes a directory and everything below it.
	Recursive bool
	// IfMatch deletes only this version (blob id) of the file; a
	// directory has no version, so it cannot be combined with one.
	IfMatch *gitstore.OID
	// IfExists deletes only an existing file, whatever its version
	// (HTTP's If-Match: *); like IfMatch, not a directory.
	IfExists bool
	// Actor is who did it; the session's agent when empty.
	Actor string
}

// Remove is Delete with conditions.
func (m *Manager) Remove(ctx context.Context, id uuid.UUID, p string, opts DeleteOptions) (MutationRecord, error) {
	ls, err := m.openWrite(ctx, id, p)
	if err != nil {
		return MutationRecord{}, err
	}
	defer ls.unlock()
	rec, _, err := m.recorder.mutate(ctx, ls, OpDelete, actorOf(ls, opts.Actor), false, func(mu *draft) error {
		want := opts.IfMatch
		if opts.IfExists && want == nil {
			// Any version: the file's own.
			n, err := mu.ov.Stat(ctx, p)
			if errors.Is(err, overlay.ErrNotFound) {
				return &PreconditionError{Path: p}
			} else if err != nil {
				return err
			}
			want = &n.OID
		}
		if err := checkIfMatch(ctx, mu, p, want); err != nil {
			return err
		}
		return ls.remove(ctx, mu, p, opts.Recursive)
	})
	return rec, err
}

// checkIfMatch enforces a condition on the file at p in the mutation's
// view: with want set, p must be a file at version want (else a
// *PreconditionError); a directory has no version to match (record.ErrInvalid).
// Every operation that changes a path with a condition checks it here or
// in put, never ignores it.
func checkIfMatch(ctx context.Context, mu *draft, p string, want *gitstore.OID) error {
	if want == nil {
		return nil
	}
	n, err := mu.ov.Stat(ctx, p)
	switch {
	case errors.Is(err, overlay.ErrNotFound):
		return &PreconditionError{Path: p}
	case err != nil:
		return err
	case n.IsDir():
		return fmt.Errorf("%w: if-match names a version of a file, and %q is a directory", record.ErrInvalid, p)
	case n.OID != *want:
		return &PreconditionError{Path: p, Current: n.OID.String()}
	}
	return nil
}

func (ls *live) remove(ctx context.Context, mu *draft, p string, recursive bool) error {
	n, err := mu.ov.Stat(ctx, p)
	if err != nil {
		return notFound(err)
	}
	if n.IsDir() {
		if !recursive {
			return fmt.Errorf("delete %q: %w: a directory needs recursive", p, record.ErrInvalid)
		}
		if err := ls.checkWriteBelow(ctx, mu.ov, p); err != nil {
			return err
		}
	}
	if err := mu.ov.Delete(ctx, p); err != nil {
		return notFound(err)
	}
	mu.touch(p)
	return nil
}

// checkWriteBelow applies the write policy to every file below directory
// p: deleting or moving a directory writes all of them.
func (ls *live) checkWriteBelow(ctx context.Context, ov *overlay.Overlay, p string) error {
	return ov.List(ctx, overlay.ListOptions{Prefix: p, Recursive: true}, func(n overlay.Node) error {
		return ls.policy.checkWrite(n.Path)
	})
}

// Move renames the file or directory src to dst, which must not exist.
func (m *Manager) Move(ctx context.Context, id uuid.UUID, src, dst, actor string) (MutationRecord, error) {
	return m.relocate(ctx, id, src, dst, actor, true)
}

// Copy copies the file or directory src to dst, which must not exist.
func (m *Manager) Copy(ctx context.Context, id uuid.UUID, src, dst, actor string) (MutationRecord, error) {
	return m.relocate(ctx, id, src, dst, actor, false)
}

func (m *Manager) relocate(ctx context.Context, id uuid.UUID, src, dst, actor string, move bool) (MutationRecord, error) {
	// A copy reads its source and writes its destination; a move writes
	// both.
	reads, writes := []string{src}, []string{dst}
	if move {
		writes = append(writes, src)
	}
	ls, err := m.openEdit(ctx, id, reads, writes)
	if err != nil {
		return MutationRecord{}, err
	}
	defer ls.unlock()
	op := OpCopy
	if move {
		op = OpMove
	}
	rec, _, err := m.recorder.mutate(ctx, ls, op, actorOf(ls, actor), false, func(mu *draft) error {
		return ls.relocateIn(ctx, mu, src, dst, move, false)
	})
	return rec, err
}

// relocateIn moves or copies src to dst. An existing dst is a conflict,
// unless overwrite is set and dst is a file, which is then replaced.
func (ls *live) relocateIn(ctx context.Context, mu *draft, src, dst string, move, overwrite bool) error {
	if src == dst || strings.HasPrefix(dst, src+"/") {
		return fmt.Errorf("%w: cannot move or copy %q into itself (%q)", record.ErrInvalid, src, dst)
	}
	if err := ls.policy.checkRead(src); err != nil {
		return err
	}
	n, err := mu.ov.Stat(ctx, src)
	if err != nil {
		return notFound(err)
	}
	if dn, err := mu.ov.Stat(ctx, dst); err == nil {
		switch {
		case dn.IsDir():
			return fmt.Errorf("%w: %q is a directory; move or copy into a path below it, or delete it first", record.ErrConflict, dst)
		case !overwrite:
			return fmt.Errorf("%w: %q exists; set overwrite to replace it", record.ErrConflict, dst)
		}
		if err := ls.policy.checkWrite(dst); err != nil {
			return err
		}
		if err := mu.ov.Delete(ctx, dst); err != nil {
			return err
		}
		mu.touch(dst)
	}
	var files []overlay.Node
	if n.IsDir() {
		err := mu.ov.List(ctx, overlay.ListOptions{Prefix: src, Recursive: true}, func(n overlay.Node) error {
			if !n.IsDir() {
				files = append(files, n)
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		files = []overlay.Node{n}
	}
	for _, f := range files {
		target := dst + strings.TrimPrefix(f.Path, src)
		if err := mu.checkSecretPath(target); err != nil {
			return err
		}
		if err := ls.policy.checkRead(f.Path); err != nil {
			return err
		}
		if err := ls.policy.checkWrite(target); err != nil {
			return err
		}
		if move {
			if err := ls.policy.checkWrite(f.Path); err != nil {
				return err
			}
		}
		if f.Mode == gitstore.ModeGitlink {
			return fmt.Errorf("%w: %q is a submodule, which is read-only", record.ErrInvalid, f.Path)
		}
		size, err := mu.blobSize(ctx, f.OID)
		if err != nil {
			return err
		}
		if err := mu.ov.PutSized(ctx, target, f.OID, f.Mode, size); err != nil {
			return err
		}
		mu.touch(target)
	}
	if move {
		if err := mu.ov.Delete(ctx, src); err != nil {
			return err
		}
		mu.touch(src)
	}
	return nil
}

// ListOptions select a listing.
type ListOptions struct {
	Prefix       string
	Recursive    bool
	OnlyModified bool
	// Glob keeps only paths matching it (and implies a recursive listing
	// below the glob's literal prefix).
	Glob string
}

// ListFiles lists the session's view in git order. Paths the policy hides are
// left out.
func (m *Manager) ListFiles(ctx context.Context, id uuid.UUID, opts ListOptions) ([]FileInfo, error) {
	var g *Glob
	globPrefix := false
	if opts.Glob != "" {
		var err error
		if g, err = CompileGlob(opts.Glob); err != nil {
			return nil, err
		}
		opts.Recursive = true
		if opts.Prefix == "" {
			opts.Prefix, globPrefix = g.Prefix(), true
		}
	}
	v, err := m.snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	defer v.release()
	if opts.Prefix != "" {
		if err := v.ov.CheckExisting(ctx, opts.Prefix); err != nil {
			return nil, err
		}
	}
	var out []FileInfo
	lopts := overlay.ListOptions{Prefix: opts.Prefix, Recursive: opts.Recursive, OnlyModified: opts.OnlyModified}
	visit := func(n overlay.Node) error {
		if !v.policy.canRead(n.Path) || (g != nil && !g.Match(n.Path)) {
			return nil
		}
		fi, err := v.info(ctx, n)
		if err != nil {
			return err
		}
		out = append(out, fi)
		return nil
	}
	if globPrefix {
		err = listGlob(ctx, v.ov, lopts, visit)
	} else {
		err = v.ov.List(ctx, lopts, visit)
	}
	if err != nil {
		return nil, notFound(err)
	}
	return out, nil
}

// listGlob lists below a glob's literal prefix: nothing when the prefix
// does not exist, and the prefix itself when it is a file (`dir/**`
// matches `dir`).
func listGlob(ctx context.Context, ov *overlay.Overlay, opts overlay.ListOptions, fn func(overlay.Node) error) error {
	err := ov.List(ctx, opts, fn)
	switch {
	case opts.Prefix == "" || err == nil:
		return err
	case errors.Is(err, overlay.ErrNotFound):
		return nil
	case errors.Is(err, overlay.ErrNotDir):
		n, serr := ov.Stat(ctx, opts.Prefix)
		if serr != nil {
			return serr
		}
		if opts.OnlyModified && n.Status == overlay.Unchanged {
			return nil
		}
		return fn(n)
	}
	return err
}

// SearchOptions describe a content search.
type SearchOptions struct {
	Pattern         string // RE2
	Glob            string
	Prefix          string
	CaseInsensitive bool
	MaxResults      int // default 1,000
	// Context is how many lines around each match to return with it (0
	// to MaxSearchContext), as grep -C does.
	Context int
}

// MaxSearchContext is the most context lines a search returns around a
// match.
const MaxSearchContext = 100

// Match is one matching line. With context, Before and After are the lines
// around it that no other match of the file shows, as grep -C prints
// them: Before starts after the previous match's After (so the lines
// from Line-len(Before) to Line are contiguous), After stops before the
// next match.
type Match struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Column int      `json:"column"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// SearchResult is the answer to a search.
type SearchResult struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated"`
}

// Search finds lines matching an RE2 pattern in the session's files
// (binary files are skipped), in git order, each with opts.Context lines
// of context, on a snapshot: writes to the session go on while it runs.
func (m *Manager) Search(ctx context.Context, id uuid.UUID, opts SearchOptions) (SearchResult, error) {
	if opts.Pattern == "" {
		return SearchResult{}, fmt.Errorf("%w: empty search pattern", record.ErrInvalid)
	}
	pat := opts.Pattern
	if opts.CaseInsensitive {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return SearchResult{}, fmt.Errorf("%w: pattern: %v", record.ErrInvalid, err)
	}
	if opts.MaxResults <= 0 {
		opts.MaxResults = 1000
	}
	if opts.Context < 0 || opts.Context > MaxSearchContext {
		return SearchResult{}, fmt.Errorf("%w: context %d: want 0 to %d lines", record.ErrInvalid, opts.Context, MaxSearchContext)
	}
	var g *Glob
	if opts.Glob != "" {
		if g, err = CompileGlob(opts.Glob); err != nil {
			return SearchResult{}, err
		}
	}
	v, err := m.snapshot(ctx, id)
	if err != nil {
		return SearchResult{}, err
	}
	defer v.release()
	if opts.Prefix != "" {
		if err := v.ov.CheckExisting(ctx, opts.Prefix); err != nil {
			return SearchResult{}, err
		}
	}
	res := SearchResult{Matches: []Match{}}
	errStop := errors.New("stop")
	err = v.ov.List(ctx, overlay.ListOptions{Prefix: opts.Prefix, Recursive: true}, func(n overlay.Node) error {
		if !n.Mode.IsBlob() || n.Mode == gitstore.ModeSymlink || !v.policy.canRead(n.Path) || (g != nil && !g.Match(n.Path)) {
			return nil
		}
		if searchFileHook != nil {
			searchFileHook(n.Path)
		}
		data, err := v.repo.ReadBlob(ctx, n.OID)
		if err != nil {
			return err
		}
		if merge.IsBinary(data) {
			return nil
		}
		return grepBlob(ctx, n.Path, data, re, opts, &res, errStop)
	})
	if err != nil && !errors.Is(err, errStop) {
		return SearchResult{}, notFound(err)
	}
	return res, nil
}

// grepBlob appends to res the lines of data (file p) that re matches, each
// with its context, and returns stop once res holds opts.MaxResults
// matches and another one is found. One pass over the lines: the last
// opts.Context lines are kept in a ring for the next match's Before, and a
// match's After fills from the lines that follow until it is full or
// the next match comes.
func grepBlob(ctx context.Context, p string, data []byte, re *regexp.Regexp, opts SearchOptions, res *SearchResult, stop error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var ring [][]byte // the last opts.Context lines; line n is ring[n%len]
	if opts.Context > 0 {
		ring = make([][]byte, opts.Context)
	}
	line, shown := 0, 0 // shown: the last line a match or its context holds
	after := -1         // the match of this file whose After is filling
	for len(data) > 0 {
		if line++; line%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		loc := re.FindIndex(text)
		if loc == nil {
			if after >= 0 {
				m := &res.Matches[after]
				m.After = append(m.After, string(text))
				shown = line
				if len(m.After) == opts.Context {
					after = -1
				}
			}
			if ring != nil {
				ring[line%len(ring)] = text
			}
			continue
		}
		if len(res.Matches) == opts.MaxResults {
			res.Truncated = true
			return stop
		}
		m := Match{Path: p, Line: line, Column: loc[0] + 1, Text: string(text)}
		for n := max(line-opts.Context, shown+1, 1); n < line; n++ {
			m.Before = append(m.Before, string(ring[n%len(ring)]))
		}
		res.Matches = append(res.Matches, m)
		shown, after = line, -1
		if opts.Context > 0 {
			after = len(res.Matches) - 1
			ring[line%len(ring)] = text
		}
	}
	return nil
}

// Summary describes a session's view in a few numbers.
type Summary struct {
	Files       int            `json:"files"`
	Directories int            `json:"directories"`
	Bytes       int64          `json:"bytes"`
	Added       int            `json:"added"`
	Modified    int            `json:"modified"`
	Deleted     int            `json:"deleted"`
	TopLevel    map[string]int `json:"top_level"` // files per top-level directory ("" for the root's own files)
	Extensions  map[string]int `json:"extensions"`
}

// TreeSummary counts the session's files, directories, bytes and changes.
func (m *Manager) TreeSummary(ctx context.Context, id uuid.UUID) (Summary, error) {
	v, err := m.snapshot(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	defer v.release()
	s := Summary{TopLevel: map[string]int{}, Extensions: map[string]int{}}
	// A directory counts when it holds a file the policy lets the session
	// read, so what the policy hides leaves no trace in the numbers.
	dirs := map[string]bool{}
	err = v.ov.List(ctx, overlay.ListOptions{Recursive: true, IncludeDeleted: true}, func(n overlay.Node) error {
		if n.IsDir() && n.Status != overlay.Deleted || !v.policy.canRead(n.Path) {
			return nil
		}
		if n.Status == overlay.Deleted {
			if !n.IsDir() {
				s.Deleted++ // deleted files, each one (the listing reports them all)
			}
			return nil
		}
		for d := path.Dir(n.Path); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
		s.Files++
		switch n.Status {
		case overlay.Added:
			s.Added++
		case overlay.Modified:
			s.Modified++
		}
		if n.Mode.IsBlob() {
			size, err := v.repo.BlobSize(ctx, n.OID)
			if err != nil {
				return err
			}
			s.Bytes += size
		}
		top, _, found := strings.Cut(n.Path, "/")
		if !found {
			top = ""
		}
		s.TopLevel[top]++
		s.Extensions[path.Ext(n.Path)]++
		return nil
	})
	s.Directories = len(dirs)
	return s, err
}

type overlayNode = overlay.Node

func listAll(prefix string) overlay.ListOptions {
	return overlay.ListOptions{Prefix: prefix, Recursive: true}
}
