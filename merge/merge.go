package merge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// ConflictKind names the way two sides of a merge disagree about a path.
type ConflictKind string

// Conflict kinds. They follow the cases git's merge reports.
const (
	ConflictContent       ConflictKind = "content"        // both edited the same lines
	ConflictAddAdd        ConflictKind = "add_add"        // both added different files
	ConflictModifyDelete  ConflictKind = "modify_delete"  // ours modified, theirs deleted
	ConflictDeleteModify  ConflictKind = "delete_modify"  // ours deleted, theirs modified
	ConflictFileDirectory ConflictKind = "file_directory" // a file on one side, a directory on the other
	ConflictMode          ConflictKind = "mode"           // both changed the mode differently
	ConflictRenameRename  ConflictKind = "rename_rename"  // both renamed one file differently
	ConflictRenameDelete  ConflictKind = "rename_delete"  // one renamed, the other deleted
	ConflictRenameAdd     ConflictKind = "rename_add"     // a rename onto a path the other side added
	ConflictDistinctTypes ConflictKind = "distinct_types" // e.g. a file on one side, a symlink on the other
	ConflictSubmodule     ConflictKind = "submodule"      // both moved a gitlink differently
	// A file one side put in a directory the other side renamed: moved to
	// the directory's new place, for the user to confirm.
	ConflictFileLocation ConflictKind = "file_location"
	// Conflicts about directory renames as a whole, with no conflicted
	// file (git records none): a directory whose files went to several
	// places with none getting most (Path is the directory), and files a
	// directory rename cannot move because something is in the way or
	// several would land on one path (Path is that path).
	ConflictDirRenameSplit     ConflictKind = "directory_rename_split"
	ConflictDirRenameCollision ConflictKind = "directory_rename_collision"
)

// Version is one side's file at a path in a conflict.
type Version struct {
	Path string        `json:"path"`
	OID  gitstore.OID  `json:"oid"`
	Mode gitstore.Mode `json:"mode"`
}

// Conflict is one conflicted path of a merge. Base, Ours and Theirs are
// nil where that side has no file.
type Conflict struct {
	Path string       `json:"path"`
	Kind ConflictKind `json:"kind"`
	// GitPaths are where git's merge records the conflict when that is
	// not Path: a file moved aside to "<path>~<label>" because a directory
	// is in its way, or both places of files of distinct types.
	GitPaths []string       `json:"git_paths,omitempty"`
	Base     *Version       `json:"base"`
	Ours     *Version       `json:"ours"`
	Theirs   *Version       `json:"theirs"`
	Hunks    []ConflictHunk `json:"hunks,omitempty"`
	Binary   bool           `json:"binary,omitempty"`
	// Rendered is the file with git-style conflict markers, for content
	// conflicts when MergeOptions.Render is set.
	Rendered []byte `json:"-"`
	Message  string `json:"message"`
}

// MergeOptions tune Merge.
type MergeOptions struct {
	// OursLabel, TheirsLabel label conflict markers and name the files
	// moved aside ("path~label"); git merge-tree uses the branch names.
	// They default to "ours" and "theirs".
	OursLabel, TheirsLabel string
	// NoRenames turns rename detection off (git: -Xno-renames).
	NoRenames bool
	// RenameScore is the similarity threshold in percent (default 50).
	RenameScore int
	// RenameLimit caps inexact rename detection (default 7,000 squared
	// pairs, git's merge default).
	RenameLimit int
	// Render fills Conflict.Rendered for content conflicts.
	Render bool
	// DirectoryRenames is what happens to a file one side added (or
	// renamed) into a directory the other side renamed away (git's
	// merge.directoryRenames). The default, as in git, moves it to the
	// directory's new place and reports a file_location conflict.
	DirectoryRenames DirRenameMode
	// Diff3 writes content conflicts in git's diff3 style
	// (merge.conflictStyle=diff3), the base's lines after a "|||||||"
	// marker labelled BaseLabel (default "base").
	Diff3     bool
	BaseLabel string
	// KeepConflicts returns a conflicted merge as a result instead of a
	// *ConflictError: the tree git merge-tree --write-tree writes (content
	// conflicts with their markers, a modified file a side deleted kept,
	// files a directory or another type is in the way of moved to
	// "path~label") and the conflicts in MergeResult.Conflicts.
	KeepConflicts bool
}

// DirRenameMode says how a merge treats directory renames.
type DirRenameMode int

// The directory rename modes, git's merge.directoryRenames values.
const (
	DirRenamesConflict DirRenameMode = iota // move, and report a conflict ("conflict")
	DirRenamesApply                         // move ("true")
	DirRenamesOff                           // leave the file where it was ("false")
)

// MergeResult is a clean merge: the merged tree, written durably.
type MergeResult struct {
	Tree gitstore.OID
	// Merged lists the paths whose content was merged line by line.
	Merged []string
	// Conflicts is set only with MergeOptions.KeepConflicts: what Tree
	// holds unresolved.
	Conflicts []Conflict
}

// stage is one side's file at a path; mode 0 means none.
type stage struct {
	mode gitstore.Mode
	oid  gitstore.OID
}

func (s stage) present() bool { return s.mode != 0 }

// pathInfo follows merge-ort's conflict_info: the three file versions at a
// path (directories are not stages), what renames did to them, and the
// resolution.
type pathInfo struct {
	path      string
	stages    [3]stage
	pathnames [3]string
	filemask  uint8
	dirmask   uint8
	matchMask uint8
	df        bool // a file and a directory meet here
	pathConfl bool // a rename made this path conflicted

	done      bool // resolved (or removed by a rename)
	clean     bool
	result    stage // zero: no file
	kind      ConflictKind
	gitPaths  []string
	hunks     []ConflictHunk
	binary    bool
	rendered  []byte
	merged    bool   // a line merge produced the result
	ours      stage  // ours's file here before renames moved stages around
	movedFrom string // where the file was before a directory rename moved it
	mask      uint8  // git's dir_rename_mask here
}

// visit is a path the walk recorded: a path info, or a file resolved in
// the walk (early) whose result differs from ours.
type visit struct {
	path  string
	info  *pathInfo // nil for an early resolution
	early stage
}

type merger struct {
	ctx    context.Context
	repo   *gitstore.Repo
	opts   MergeOptions
	trees  [3]gitstore.OID
	infos  map[string]*pathInfo
	order  []string
	visits []visit // what the walk recorded, in its order
	blobs  map[gitstore.OID][]byte
	labels [3]string
	err    error // first failure inside a content merge

	// Directory renames (dirrename.go).
	dirs         []dirEntry           // directories walked, parents first
	dirMeta      map[string]*dirEntry // the same by path
	noRelevant   [3]bool              // sides that need no rename detection
	moved        map[string]bool      // paths a directory rename moved a file from
	pending      []int                // deferred directories (indexes into dirs)
	walkAll      [3]bool              // a side whose deferred directories are walked
	takenWhole   []string             // directories resolved to theirs's absence, unwalked
	reorder      bool                 // order needs sorting again
	dirConflicts []Conflict           // conflicts about directory renames as a whole
}

// Merge merges trees ours and theirs, both descended from base, the way
// git merge-tree --write-tree does (merge-ort with its default options,
// without directory rename detection): it returns the merged tree, or a
// *ConflictError (errors.Is ErrConflict) and writes nothing; a result
// holding a .gitmodules or .gitattributes that git fsck refuses is an
// *overlay.PathError naming the rule, and writes nothing. Arguments may
// be tree or commit ids (a commit stands for its tree); ZeroOID is the
// empty tree. Its cost is proportional to the paths that differ.
func Merge(ctx context.Context, repo *gitstore.Repo, base, ours, theirs gitstore.OID, opts MergeOptions) (*MergeResult, error) {
	var trees [3]gitstore.OID
	for i, id := range []gitstore.OID{base, ours, theirs} {
		t, err := repo.TreeOf(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		trees[i] = t
	}
	opts.OursLabel = cmp.Or(opts.OursLabel, "ours")
	opts.TheirsLabel = cmp.Or(opts.TheirsLabel, "theirs")
	opts.RenameLimit = cmp.Or(opts.RenameLimit, 7000)
	opts.BaseLabel = cmp.Or(opts.BaseLabel, "base")
	m := &merger{
		ctx: ctx, repo: repo, opts: opts, trees: trees,
		infos:  map[string]*pathInfo{},
		blobs:  map[gitstore.OID][]byte{},
		moved:  map[string]bool{},
		labels: [3]string{"base", opts.OursLabel, opts.TheirsLabel},
	}
	// Trivial merges, as git resolves them before looking inside.
	switch {
	case trees[1] == trees[2], trees[0] == trees[2]:
		return &MergeResult{Tree: trees[1]}, nil
	case trees[0] == trees[1]:
		return &MergeResult{Tree: trees[2]}, nil
	}
	if err := m.collect(trees[0], trees[1], trees[2], "", 0); err != nil {
		return nil, err
	}
	if err := m.resolveDeferred(); err != nil {
		return nil, err
	}
	if !opts.NoRenames {
		if err := m.renames(); err != nil {
			return nil, err
		}
	}
	if err := m.process(); err != nil {
		return nil, err
	}
	return m.finish()
}

// collect walks the three trees together, skipping every subtree whose id
// is the same on all sides, and records the paths that need a decision.
// It walks each directory's entries by name, so that a file and a
// directory of one name meet, in the order of m.order: names sorted,
// a directory's paths right after its name.
//
// mask is git's dir_rename_mask for dir: 0, or 2 or 4 inside a directory
// one side removed (the side that kept it), or 7 where directory renames
// matter. A directory that only one side changed is deferred (merge-ort's
// possible trivial merge) unless directory renames matter in it.
func (m *merger) collect(b, o, t gitstore.OID, dir string, mask uint8) error {
	if err := m.ctx.Err(); err != nil {
		return err
	}
	var lists [3][]gitstore.TreeEntry
	for i, id := range [3]gitstore.OID{b, o, t} {
		e, err := loadEntries(m.ctx, m.repo, id)
		if err != nil {
			return fmt.Errorf("merge %q: %w", dir, err)
		}
		lists[i] = nameOrder(e)
	}
	if (mask == 2 || mask == 4) && addedOnly(lists, int(mask/2)) {
		mask = 7 // the side that kept the directory added a file to it
	}
	var next [3]int
	for {
		if next[0] < len(lists[0]) && next[1] < len(lists[1]) && next[2] < len(lists[2]) {
			// Most entries are the same on all sides.
			e := lists[0][next[0]]
			if e == lists[1][next[1]] && e == lists[2][next[2]] {
				next[0]++
				next[1]++
				next[2]++
				continue
			}
		}
		// The smallest name at the heads of the lists, and who has it.
		var tr [3]*gitstore.TreeEntry
		name, found := "", false
		for i, l := range lists {
			if next[i] < len(l) && (!found || l[next[i]].Name < name) {
				name, found = l[next[i]].Name, true
			}
		}
		if !found {
			return nil
		}
		for i, l := range lists {
			if next[i] < len(l) && l[next[i]].Name == name {
				tr[i] = &l[next[i]]
				next[i]++
			}
		}
		same := func(i, j int) bool {
			return tr[i] != nil && tr[j] != nil && tr[i].Mode == tr[j].Mode && tr[i].OID == tr[j].OID
		}
		if same(0, 1) && same(0, 2) {
			continue
		}
		p := joinPath(dir, name)
		var st [3]stage
		var filemask, dirmask uint8
		var sub [3]gitstore.OID
		for i, e := range tr {
			switch {
			case e == nil:
			case e.Mode.IsDir():
				dirmask |= 1 << i
				sub[i] = e.OID
			default:
				filemask |= 1 << i
				st[i] = stage{e.Mode, e.OID}
			}
		}
		var match uint8
		switch {
		case same(0, 1):
			match = 3
		case same(0, 2):
			match = 5
		case same(1, 2):
			match = 6
		}
		if filemask == 7 && match != 0 {
			// All three are files and one side kept the base (or both
			// made the same change): the answer is known now.
			res := st[1]
			if match == 3 {
				res = st[2]
			}
			if res != st[1] {
				m.visits = append(m.visits, visit{path: p, early: res})
			}
			continue
		}
		em := mask // the mask at this entry (collect_rename_info)
		if em != 7 && (dirmask == 3 || dirmask == 5) {
			em = dirmask &^ 1
		}
		if filemask != 0 {
			match &= filemask // sides that match as directories do not count
			ci := &pathInfo{
				path: p, stages: st, pathnames: [3]string{p, p, p},
				filemask: filemask, dirmask: dirmask, matchMask: match,
				df: dirmask != 0, ours: st[1], mask: em,
			}
			m.infos[p] = ci
			m.order = append(m.order, p)
			m.visits = append(m.visits, visit{path: p, info: ci})
		}
		if dirmask != 0 {
			// The side git may resolve this directory for without
			// looking inside (merge-ort's possible trivial merges).
			side := 0
			switch {
			case filemask == 0 && (dirmask == 2 || dirmask == 4):
				side = int(dirmask / 2)
			case same(0, 1):
				side = 2
			case same(0, 2):
				side = 1
			}
			d := dirEntry{path: p, dirmask: dirmask, filemask: filemask, trivialSide: side,
				entryMask: em, deferred: em != 7 && side != 0, sub: sub}
			m.dirs = append(m.dirs, d)
			if d.deferred && filemask == 0 && !m.walkAll[side] {
				m.pending = append(m.pending, len(m.dirs)-1)
				continue
			}
			if err := m.collect(sub[0], sub[1], sub[2], p, em); err != nil {
				return err
			}
		}
	}
}

// nameOrder returns entries, which are in git order, sorted by name. The
// orders differ only where a directory follows entries that extend its
// name with a byte below '/' ("a-b" and "a.c" come before directory "a",
// which sorts as "a/"), and only then is the list copied.
func nameOrder(entries []gitstore.TreeEntry) []gitstore.TreeEntry {
	for k := 1; k < len(entries); k++ {
		d, prev := entries[k].Name, entries[k-1].Name
		if entries[k].Mode.IsDir() && len(prev) > len(d) && strings.HasPrefix(prev, d) {
			sorted := slices.Clone(entries)
			slices.SortFunc(sorted, func(a, b gitstore.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
			return sorted
		}
	}
	return entries
}

// renames finds each side's renames, moves what the other side added to
// renamed directories, and applies the renames to the path infos
// (merge-ort's detect_and_process_renames).
func (m *merger) renames() error {
	if len(m.order) == 0 {
		return nil // every changed file was resolved while walking
	}
	sides := m.renameSetup()
	if len(sides[1].relevant) == 0 && len(sides[2].relevant) == 0 {
		return nil
	}
	for s := 1; s <= 2; s++ {
		if err := m.detectSide(s, &sides[s]); err != nil {
			return err
		}
	}
	if m.opts.DirectoryRenames != DirRenamesOff {
		for s := 1; s <= 2; s++ {
			sides[s].dirs.decide()
			for _, dir := range sortedKeys(sides[s].dirs.split) {
				m.dirConflicts = append(m.dirConflicts, Conflict{Path: dir, Kind: ConflictDirRenameSplit,
					Message: fmt.Sprintf("unclear where %s renamed directory %s to: no directory got most of its files", m.labels[s], dir)})
			}
		}
		// A directory both sides renamed is left to the file renames.
		for dir := range sides[1].dirs.renames {
			if _, ok := sides[2].dirs.renames[dir]; ok {
				delete(sides[1].dirs.renames, dir)
				delete(sides[2].dirs.renames, dir)
			}
		}
	}
	for s := 1; s <= 2; s++ {
		computeCollisions(&sides[s], sides[3-s].dirs.renames)
	}
	var all []sideRename
	for s := 1; s <= 2; s++ {
		rs, err := m.collectRenames(s, &sides)
		if err != nil {
			return err
		}
		all = append(all, rs...)
	}
	if m.reorder {
		m.order = slices.DeleteFunc(m.order, func(p string) bool { return m.infos[p] == nil })
		slices.SortFunc(m.order, comparePaths)
		slices.SortStableFunc(m.visits, func(a, b visit) int { return comparePaths(a.path, b.path) })
	}
	slices.SortStableFunc(all, func(a, b sideRename) int { return strings.Compare(a.old, b.old) })
	return m.processRenames(all)
}

// sideRename is one side's rename of file old to new.
type sideRename struct {
	side     int
	old, new string
}

func (m *merger) processRenames(all []sideRename) error {
	for i := 0; i < len(all); i++ {
		r := all[i]
		oldinfo, newinfo := m.infos[r.old], m.infos[r.new]
		if oldinfo == nil || oldinfo.done && oldinfo.clean {
			continue
		}
		if i+1 < len(all) && all[i+1].old == r.old {
			// Both sides renamed the same file.
			r2 := all[i+1]
			i++
			side1, side2 := newinfo, m.infos[r2.new]
			if r.new == r2.new {
				side1.stages[0] = oldinfo.stages[0]
				side1.filemask |= 1
				oldinfo.done, oldinfo.clean, oldinfo.result = true, true, stage{}
				continue
			}
			merged, res := m.contentMerge(r.old, oldinfo.stages[0], side1.stages[1], side2.stages[2],
				[3]string{r.old, r.new, r2.new}, 1)
			if res == nil {
				return m.err
			}
			wasBinary := !res.clean && merged == side1.stages[1]
			side1.stages[1] = merged
			if wasBinary {
				merged = side2.stages[2]
			}
			side2.stages[2] = merged
			side1.pathConfl, side2.pathConfl, oldinfo.pathConfl = true, true, true
			for _, ci := range []*pathInfo{side1, side2, oldinfo} {
				ci.kind = ConflictRenameRename
			}
			continue
		}
		target := r.side
		other := 3 - target
		sourceDeleted := oldinfo.filemask == 1
		collision := newinfo.filemask&(1<<other) != 0
		typeChanged := !sourceDeleted && isRegular(oldinfo.stages[other].mode) != isRegular(newinfo.stages[target].mode)
		if typeChanged && collision {
			collision = false
		}
		switch {
		case collision && !sourceDeleted:
			var names [3]string
			names[0], names[other], names[target] = r.old, r.old, r.new
			var sides [3]stage
			sides[0] = oldinfo.stages[0]
			sides[other] = oldinfo.stages[other]
			sides[target] = newinfo.stages[target]
			merged, res := m.contentMerge(r.old, sides[0], sides[1], sides[2], names, 1)
			if res == nil {
				return m.err
			}
			newinfo.stages[target] = merged
			newinfo.kind = ConflictRenameAdd
		case collision && sourceDeleted:
			newinfo.pathConfl = true
			newinfo.kind = ConflictRenameDelete
		default:
			newinfo.stages[0] = oldinfo.stages[0]
			newinfo.filemask |= 1
			newinfo.pathnames[0] = r.old
			switch {
			case typeChanged:
				oldinfo.stages[0] = stage{}
				oldinfo.filemask &= 6
			case sourceDeleted:
				newinfo.pathConfl = true
				newinfo.kind = ConflictRenameDelete
			default:
				newinfo.stages[other] = oldinfo.stages[other]
				newinfo.filemask |= 1 << other
				newinfo.pathnames[other] = r.old
			}
		}
		if !typeChanged {
			oldinfo.done, oldinfo.clean, oldinfo.result = true, true, stage{}
		}
	}
	return nil
}

func isRegular(m gitstore.Mode) bool { return m == gitstore.ModeFile || m == gitstore.ModeExec }

// process resolves every path: files first, then paths where a file
// meets a directory, whose outcome depends on what is left in the
// directory.
func (m *merger) process() error {
	var dfs []string
	for _, p := range m.order {
		ci := m.infos[p]
		if ci.done {
			continue
		}
		if ci.df {
			dfs = append(dfs, p)
			continue
		}
		if err := m.processEntry(ci); err != nil {
			return err
		}
	}
	slices.Reverse(dfs)
	for _, p := range dfs {
		ci := m.infos[p]
		survives, err := m.dirSurvives(p)
		if err != nil {
			return err
		}
		if !survives {
			ci.df = false
		} else {
			if ci.filemask == 1 {
				ci.done, ci.clean = true, true
				continue
			}
			side := 1
			if ci.dirmask&2 != 0 {
				side = 2
			}
			ci.gitPaths = []string{m.uniquePath(p, m.labels[side])}
			if ci.kind == "" {
				ci.kind = ConflictFileDirectory
			}
		}
		if err := m.processEntry(ci); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) uniquePath(p, label string) string {
	base := p + "~" + strings.ReplaceAll(label, "/", "_")
	cand := base
	for i := 0; ; i++ {
		if _, taken := m.infos[cand]; !taken {
			return cand
		}
		cand = fmt.Sprintf("%s_%d", base, i)
	}
}

// dirSurvives reports whether the merged tree still has something below
// directory p.
func (m *merger) dirSurvives(p string) (bool, error) {
	prefix := p + "/"
	for q, ci := range m.infos {
		if strings.HasPrefix(q, prefix) && ci.done && ci.result.present() && len(ci.gitPaths) == 0 {
			return true, nil
		}
	}
	for _, v := range m.visits {
		if v.info == nil && v.early.present() && strings.HasPrefix(v.path, prefix) {
			return true, nil
		}
	}
	e, err := m.repo.Lookup(m.ctx, m.trees[1], p)
	if errors.Is(err, gitstore.ErrNotFound) || (err == nil && !e.Mode.IsDir()) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	errFound := errors.New("found")
	err = m.repo.List(m.ctx, e.OID, "", true, func(x gitstore.Entry) error {
		if x.Mode.IsDir() {
			return nil
		}
		q := prefix + x.Path
		if ci, ok := m.infos[q]; ok && ci.done && !ci.result.present() || m.moved[q] {
			return nil
		}
		for _, d := range m.takenWhole {
			if strings.HasPrefix(q, d+"/") {
				return nil
			}
		}
		return errFound
	})
	if err == errFound {
		return true, nil
	}
	return false, err
}

// processEntry resolves one path (merge-ort's process_entry).
func (m *merger) processEntry(ci *pathInfo) error {
	ci.done = true
	st := &ci.stages
	switch {
	case ci.matchMask != 0:
		ci.clean = !ci.df && !ci.pathConfl
		if ci.matchMask == 6 {
			ci.result = st[1]
		} else {
			side := 1
			if 7&^ci.matchMask == 4 {
				side = 2
			}
			ci.result = st[side]
			if !ci.result.present() {
				ci.clean = true
			}
		}
	case ci.filemask >= 6 && fileType(st[1].mode) != fileType(st[2].mode):
		ci.clean = false
		ci.kind = ConflictDistinctTypes
		ci.result = st[1]
		// git keeps one of them at the path and moves the other (a regular
		// file first) or both aside.
		a, b := ci.path, ci.path
		switch {
		case isRegular(st[1].mode):
			a = m.uniquePath(ci.path, m.labels[1])
		case isRegular(st[2].mode):
			b = m.uniquePath(ci.path, m.labels[2])
		default:
			a = m.uniquePath(ci.path, m.labels[1])
			b = m.uniquePath(ci.path, m.labels[2])
		}
		ci.gitPaths = []string{a, b}
	case ci.filemask >= 6:
		base := st[0]
		merged, res := m.contentMerge(ci.path, base, st[1], st[2], ci.pathnames, 0)
		if res == nil {
			return m.err
		}
		ci.result = merged
		ci.clean = res.clean && !ci.df && !ci.pathConfl
		ci.hunks, ci.binary, ci.rendered, ci.merged = res.hunks, res.binary, res.rendered, res.lineMerged
		if !res.clean && ci.kind == "" {
			switch {
			case st[1].mode == gitstore.ModeGitlink:
				ci.kind = ConflictSubmodule
			case res.modeOnly:
				ci.kind = ConflictMode
			case ci.filemask == 6:
				ci.kind = ConflictAddAdd
			default:
				ci.kind = ConflictContent
			}
		}
	case ci.filemask == 3 || ci.filemask == 5:
		side := 1
		if ci.filemask == 5 {
			side = 2
		}
		ci.result = st[side]
		ci.clean = false
		if ci.kind == "" {
			ci.kind = ConflictModifyDelete
			if side == 2 {
				ci.kind = ConflictDeleteModify
			}
		}
	case ci.filemask == 2 || ci.filemask == 4:
		side := 1
		if ci.filemask == 4 {
			side = 2
		}
		ci.result = st[side]
		ci.clean = !ci.df && !ci.pathConfl
	case ci.filemask == 1:
		ci.result = stage{}
		ci.clean = !ci.pathConfl
	}
	if ci.clean && !ci.result.present() {
		ci.gitPaths = nil
	}
	return nil
}

type contentResult struct {
	clean, binary, modeOnly, lineMerged bool
	hunks                               []ConflictHunk
	rendered                            []byte
}

func (m *merger) blob(id gitstore.OID) ([]byte, error) {
	if id.IsZero() {
		return nil, nil
	}
	if b, ok := m.blobs[id]; ok {
		return b, nil
	}
	b, err := m.repo.ReadBlob(m.ctx, id)
	if err != nil {
		return nil, err
	}
	m.blobs[id] = b
	return b, nil
}

// contentMerge merges three versions of one file (handle_content_merge).
// Merges whose result may be merged again (rename collisions) get longer
// conflict markers, as in git, so the two levels stay apart.
// A nil result means the context ended or a blob could not be read; the
// error is kept in m.
func (m *merger) contentMerge(path string, o, a, b stage, names [3]string, extraMarker int) (stage, *contentResult) {
	res := &contentResult{clean: true}
	var out stage
	if a.mode == b.mode || a.mode == o.mode {
		out.mode = b.mode
	} else {
		out.mode = a.mode
		res.clean = b.mode == o.mode
		res.modeOnly = !res.clean
	}
	switch {
	case a.oid == b.oid || a.oid == o.oid:
		out.oid = b.oid
	case b.oid == o.oid:
		out.oid = a.oid
	case isRegular(a.mode):
		res.modeOnly = false
		if fileType(o.mode) != fileType(a.mode) {
			o = stage{}
		}
		ob, err1 := m.blob(o.oid)
		ab, err2 := m.blob(a.oid)
		bb, err3 := m.blob(b.oid)
		if err := errors.Join(err1, err2, err3); err != nil {
			m.fail(err)
			return stage{}, nil
		}
		lo := LineMergeOptions{OursLabel: m.labels[1], TheirsLabel: m.labels[2], MarkerSize: defaultMarkerSize + extraMarker, Histogram: true}
		if m.opts.Diff3 {
			lo.Diff3, lo.BaseLabel = true, m.opts.BaseLabel
		}
		if names[0] != names[1] || names[1] != names[2] {
			lo.OursLabel += ":" + names[1]
			lo.TheirsLabel += ":" + names[2]
			lo.BaseLabel += ":" + names[0]
		}
		lm := MergeLines(ob, ab, bb, lo)
		res.lineMerged = true
		if lm.Binary {
			res.clean, res.binary = false, true
			out.oid = a.oid
			return out, res
		}
		out.oid = gitstore.HashObject(gitstore.KindBlob, lm.Content)
		m.blobs[out.oid] = lm.Content
		if !lm.Clean() {
			res.clean = false
			res.hunks = lm.Conflicts
			if m.opts.Render {
				res.rendered = lm.Content
			}
		}
	default: // symlinks and gitlinks: git cannot merge them
		res.modeOnly = false
		res.clean = false
		out.oid = a.oid
	}
	return out, res
}

// fail records the first error hit where a function cannot return one.
func (m *merger) fail(err error) {
	if m.err == nil {
		m.err = fmt.Errorf("merge: %w", err)
	}
}

// finish turns the resolutions into conflicts, or into a tree.
func (m *merger) finish() (*MergeResult, error) {
	if m.err != nil {
		return nil, m.err
	}
	var conflicts []Conflict
	for _, p := range m.order {
		ci := m.infos[p]
		if ci.clean {
			continue
		}
		conflicts = append(conflicts, m.conflict(ci))
	}
	conflicts = append(conflicts, m.dirConflicts...)
	if len(conflicts) > 0 {
		slices.SortFunc(conflicts, func(a, b Conflict) int { return strings.Compare(a.Path, b.Path) })
		if !m.opts.KeepConflicts {
			return nil, &ConflictError{Conflicts: conflicts}
		}
	}
	// Changes relative to ours, in the walk's order, which keeps the
	// paths below a directory right after its name.
	var changes, kept []gitstore.Change
	var merged []string
	put := "" // the last file put: it replaces any directory of ours there
	for _, v := range m.visits {
		c := gitstore.Change{Path: v.path, Mode: v.early.mode, OID: v.early.oid, Delete: !v.early.present()}
		if ci := v.info; ci != nil && !ci.clean {
			kept = append(kept, keptChanges(ci)...)
			continue
		}
		if ci := v.info; ci != nil {
			c.Delete = false
			if ci.result == ci.ours {
				continue
			}
			if ci.merged {
				merged = append(merged, v.path)
			}
			switch {
			case ci.result.present():
				c.Mode, c.OID = ci.result.mode, ci.result.oid
			case ci.ours.present():
				c.Delete = true
			default:
				continue
			}
		}
		if put != "" && len(c.Path) > len(put) && c.Path[len(put)] == '/' && strings.HasPrefix(c.Path, put) {
			continue
		}
		if !c.Delete {
			put = c.Path
		}
		changes = append(changes, c)
	}
	changes = dropDeletesBelowFiles(append(changes, kept...))
	if err := m.checkContents(changes); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	b := m.repo.NewBatch()
	for _, c := range changes {
		if c.Delete {
			continue
		}
		if data, ok := m.blobs[c.OID]; ok {
			if has, _ := m.repo.HasObject(m.ctx, c.OID); !has {
				b.AddBlob(data)
			}
		}
	}
	tree, err := b.BuildTree(m.ctx, m.trees[1], changes)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if err := b.Flush(m.ctx); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return &MergeResult{Tree: tree, Merged: merged, Conflicts: conflicts}, nil
}

// keptChanges are the changes to ours that leave conflicted path ci as
// git's merge leaves it in the work tree (MergeOptions.KeepConflicts).
func keptChanges(ci *pathInfo) []gitstore.Change {
	put := func(p string, s stage) gitstore.Change { return gitstore.Change{Path: p, Mode: s.mode, OID: s.oid} }
	var out []gitstore.Change
	switch {
	case len(ci.gitPaths) == 2: // distinct types: one or both moved aside
		a, b := ci.gitPaths[0], ci.gitPaths[1]
		if a != ci.path && b != ci.path && ci.ours.present() {
			out = append(out, gitstore.Change{Path: ci.path, Delete: true})
		}
		if a != ci.path || ci.stages[1] != ci.ours {
			out = append(out, put(a, ci.stages[1]))
		}
		out = append(out, put(b, ci.stages[2]))
	case len(ci.gitPaths) == 1: // a directory is in the way: the file moves aside
		if ci.ours.present() {
			out = append(out, gitstore.Change{Path: ci.path, Delete: true})
		}
		if ci.result.present() {
			out = append(out, put(ci.gitPaths[0], ci.result))
		}
	case ci.result == ci.ours:
	case ci.result.present():
		out = append(out, put(ci.path, ci.result))
	case ci.ours.present():
		out = append(out, gitstore.Change{Path: ci.path, Delete: true})
	}
	return out
}

// dropDeletesBelowFiles leaves out the deletes below a file that is put:
// the file replaces the directory, and all below it, already. A kept
// conflict's file (one side renamed a file to where the other side's
// directory was deleted, say) is put after the clean walk deleted that
// directory's files.
func dropDeletesBelowFiles(changes []gitstore.Change) []gitstore.Change {
	files := map[string]bool{}
	for _, c := range changes {
		if !c.Delete && (c.Mode.IsBlob() || c.Mode == gitstore.ModeGitlink) {
			files[c.Path] = true
		}
	}
	return slices.DeleteFunc(changes, func(c gitstore.Change) bool {
		if !c.Delete {
			return false
		}
		for i := strings.LastIndexByte(c.Path, '/'); i > 0; i = strings.LastIndexByte(c.Path[:i], '/') {
			if files[c.Path[:i]] {
				return true
			}
		}
		return false
	})
}

// checkContents applies overlay's content rules to the files the merge
// puts: a merge can make a .gitmodules git fsck refuses out of two sides
// it accepts (one renames a file to .gitmodules, the other changes the
// file), and the tree naming it must not be written.
func (m *merger) checkContents(changes []gitstore.Change) error {
	for _, c := range changes {
		if c.Delete || !overlay.ContentChecked(c.Path, c.Mode) {
			continue
		}
		data, ok := m.blobs[c.OID]
		if !ok {
			var err error
			if data, err = m.repo.ReadBlob(m.ctx, c.OID); err != nil {
				return fmt.Errorf("read %q for its content rules: %w", c.Path, err)
			}
		}
		if err := overlay.CheckContent(c.Path, c.Mode, data); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) conflict(ci *pathInfo) Conflict {
	v := func(i int) *Version {
		s := ci.stages[i]
		if !s.present() {
			return nil
		}
		return &Version{Path: ci.pathnames[i], OID: s.oid, Mode: s.mode}
	}
	kind := ci.kind
	if kind == "" {
		kind = ConflictContent
		if ci.df {
			kind = ConflictFileDirectory
		}
	}
	c := Conflict{
		Path: ci.path, Kind: kind, GitPaths: ci.gitPaths,
		Base: v(0), Ours: v(1), Theirs: v(2),
		Hunks: ci.hunks, Binary: ci.binary, Rendered: ci.rendered,
	}
	c.Message = conflictMessage(c, m.labels)
	if kind == ConflictFileLocation {
		c.Message = fmt.Sprintf("%s was in a directory the other side renamed; moved to %s", ci.movedFrom, ci.path)
	}
	return c
}

func conflictMessage(c Conflict, labels [3]string) string {
	switch c.Kind {
	case ConflictModifyDelete:
		return fmt.Sprintf("%s deleted in %s and modified in %s", c.Path, labels[2], labels[1])
	case ConflictDeleteModify:
		return fmt.Sprintf("%s deleted in %s and modified in %s", c.Path, labels[1], labels[2])
	case ConflictFileDirectory:
		return fmt.Sprintf("a directory is in the way of file %s", c.Path)
	case ConflictAddAdd:
		return fmt.Sprintf("%s added differently in %s and %s", c.Path, labels[1], labels[2])
	case ConflictMode:
		return fmt.Sprintf("%s has conflicting modes", c.Path)
	case ConflictRenameRename:
		return fmt.Sprintf("%s renamed differently in %s and %s", c.Path, labels[1], labels[2])
	case ConflictRenameDelete:
		return fmt.Sprintf("%s renamed on one side and deleted on the other", c.Path)
	case ConflictRenameAdd:
		return fmt.Sprintf("a rename onto %s collides with another file", c.Path)
	case ConflictDistinctTypes:
		return fmt.Sprintf("%s has different types in %s and %s", c.Path, labels[1], labels[2])
	case ConflictSubmodule:
		return fmt.Sprintf("submodule %s moved differently", c.Path)
	}
	if c.Binary {
		return fmt.Sprintf("cannot merge binary file %s", c.Path)
	}
	return fmt.Sprintf("merge conflict in %s", c.Path)
}
