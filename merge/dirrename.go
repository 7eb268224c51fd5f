package merge

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Directory rename detection, as git's merge-ort and diffcore-rename do
// it. When one side removed a directory and the other side added files to
// it, the renames of the removed directory's files say where it went
// ("majority rules"), and the added files follow it there.

// dirRelevance is why a merge needs to know where a removed directory
// went (git's dir_rename_relevance).
type dirRelevance uint8

const (
	dirNotRelevant dirRelevance = iota
	dirForAncestor              // an ancestor needs it
	dirForSelf                  // the other side added files to it
)

// unknownDir counts sources whose rename is not known yet; it cannot be a
// directory name.
const unknownDir = "/"

// dirRenameInfo counts, for one side of a merge, where the files of each
// removed directory were renamed to. A nil *dirRenameInfo counts nothing.
type dirRenameInfo struct {
	removed map[string]dirRelevance   // directories removed on this side
	counts  map[string]map[string]int // old directory -> new directory -> renames
	guesses map[string]string         // old directory -> likeliest new one
	split   map[string]bool           // no new directory got a majority
	renames map[string]string         // the directory renames found
}

func newDirRenameInfo() *dirRenameInfo {
	return &dirRenameInfo{removed: map[string]dirRelevance{}, counts: map[string]map[string]int{}}
}

func (d *dirRenameInfo) increment(oldDir, newDir string) {
	c := d.counts[oldDir]
	if c == nil {
		c = map[string]int{}
		d.counts[oldDir] = c
	}
	c[newDir]++
}

// update counts the rename of file oldPath to newPath for its directory
// and for every ancestor the two paths share a trailing part with
// ("a/b/c/f" -> "x/y/c/f" also suggests a/b -> x/y), as far as the
// ancestors were removed and need it (update_dir_rename_counts).
func (d *dirRenameInfo) update(oldPath, newPath string) {
	if d == nil {
		return
	}
	oldDir, newDir := oldPath, newPath
	first := true
	for {
		oldName, newName := path.Base(oldDir), path.Base(newDir)
		oldDir, newDir = parentDir(oldDir), parentDir(newDir)
		if _, ok := d.removed[oldDir]; !ok {
			break
		}
		if !first && oldName != newName {
			break
		}
		rel := d.removed[oldDir]
		if rel == dirForSelf || first {
			d.increment(oldDir, newDir)
		}
		first = false
		if rel == dirNotRelevant || oldDir == "" || newDir == "" {
			break
		}
	}
}

// makeGuesses picks, for each directory some exact renames left, the new
// directory most of them went to; the base name step uses it to pair
// files whose names are not unique.
func (d *dirRenameInfo) makeGuesses() {
	d.guesses = map[string]string{}
	for oldDir, c := range d.counts {
		best, most := "", 0
		for newDir, n := range c {
			// Ties go to the smallest name; git takes the first in its
			// hash order.
			if n > most || n == most && newDir < best {
				best, most = newDir, n
			}
		}
		d.guesses[oldDir] = best
	}
}

// guess returns the destination a source most likely went to, judging by
// where its directory went, or -1 (idx_possible_rename).
func (d *dirRenameInfo) guess(src string, byPath map[string]int) int {
	if d == nil {
		return -1
	}
	newDir, ok := d.guesses[parentDir(src)]
	if !ok {
		return -1
	}
	if idx, ok := byPath[newDir+"/"+path.Base(src)]; ok {
		return idx
	}
	return -1
}

// cullKnown drops the sources that are wanted only for directory renames
// once every directory they could tell about already has a majority
// whatever they turn out to be (handle_early_known_dir_renames).
func (d *dirRenameInfo) cullKnown(changes []FileChange, srcs []int, relevant map[string]relevance) []int {
	for _, s := range srcs {
		for dir := parentDir(changes[s].OldPath); dir != "" && d.removed[dir] != dirNotRelevant; dir = parentDir(dir) {
			d.increment(dir, unknownDir)
		}
	}
	for dir, c := range d.counts {
		if d.removed[dir] == dirForSelf && determinable(c) {
			d.removed[dir] = dirForAncestor
		}
	}
	return slices.DeleteFunc(srcs, func(s int) bool {
		p := changes[s].OldPath
		if relevant[p] != relevantLocation {
			return false
		}
		for dir := parentDir(p); ; dir = parentDir(dir) {
			switch d.removed[dir] {
			case dirNotRelevant:
				relevant[p] = relevantNoMore
				return true
			case dirForSelf:
				return false
			}
		}
	})
}

// determinable reports whether the top count beats the second even if
// every unknown went to the second (dir_rename_already_determinable).
func determinable(c map[string]int) bool {
	first, second := 0, 0
	for dir, n := range c {
		switch {
		case dir == unknownDir:
		case n >= first:
			first, second = n, first
		case n >= second:
			second = n
		}
	}
	return first > second+c[unknownDir]
}

// decide turns the counts into directory renames: each removed directory
// that needs one goes where a strict majority of its counted files went
// (cleanup_dir_rename_info and get_provisional_directory_renames).
func (d *dirRenameInfo) decide() {
	d.renames, d.split = map[string]string{}, map[string]bool{}
	for oldDir, c := range d.counts {
		if d.removed[oldDir] == dirNotRelevant {
			continue
		}
		best, most, tie := "", 0, false
		for newDir, n := range c {
			switch {
			case newDir == unknownDir:
			case n > most:
				best, most, tie = newDir, n, false
			case n == most:
				tie = true
			}
		}
		switch {
		case most == 0:
		case tie:
			d.split[oldDir] = true
		default:
			d.renames[oldDir] = best
		}
	}
}

// renamedAncestor returns the nearest directory above p that has a
// rename in renames (check_dir_renamed).
func renamedAncestor(p string, renames map[string]string) (string, bool) {
	for dir := parentDir(p); dir != ""; dir = parentDir(dir) {
		if _, ok := renames[dir]; ok {
			return dir, true
		}
	}
	return "", false
}

// applyDirRename moves p, which is below oldDir, to newDir.
func applyDirRename(p, oldDir, newDir string) string {
	rest := p[len(oldDir)+1:]
	if newDir == "" {
		return rest
	}
	return newDir + "/" + rest
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// comparePaths orders paths as the merge walks them: depth first, the
// names of one directory in byte order.
func comparePaths(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		an, bn := a, b
		if ai >= 0 {
			an = a[:ai]
		}
		if bi >= 0 {
			bn = b[:bi]
		}
		if c := strings.Compare(an, bn); c != 0 || ai < 0 || bi < 0 {
			return cmp.Or(c, cmp.Compare(ai, bi))
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

// dirEntry is a directory the merge walked into: present on some side and
// not the same on all three.
type dirEntry struct {
	path              string
	dirmask, filemask uint8
	// trivialSide is the side git may take this directory from without
	// looking inside (the other side kept the base's), or 0.
	trivialSide int
	entryMask   uint8 // git's dir_rename_mask at this entry
	deferred    bool  // git defers looking inside (possible trivial merge)
	sub         [3]gitstore.OID
}

// sideRenames is the rename state of one side of a merge.
type sideRenames struct {
	relevant   map[string]relevance // sources whose rename matters
	changes    []FileChange         // the side's deletions and additions
	pairs      []FileChange         // after detection: renames and additions
	dirs       *dirRenameInfo
	collisions map[string]*dirCollision // where the other side's directory renames put this side's files
}

// dirCollision lists the files directory renames would put at one path.
type dirCollision struct {
	sources  []string
	reported bool
}

// renameSetup works out what rename detection needs, the way merge-ort's
// collect_rename_info does while it walks the trees: each side's deleted
// and added files, which deleted files are relevant and why, and which
// directories each side removed and whether their new place matters.
func (m *merger) renameSetup() [3]sideRenames {
	var sides [3]sideRenames
	for s := 1; s <= 2; s++ {
		sides[s].relevant = map[string]relevance{}
		sides[s].dirs = newDirRenameInfo()
	}
	// collect worked out git's dir_rename_mask for every entry.
	group := map[string]int{} // 1 or 2 below a directory deferred for that side
	m.dirMeta = make(map[string]*dirEntry, len(m.dirs))
	for i := range m.dirs {
		d := &m.dirs[i]
		if d.dirmask == 1 || d.dirmask == 3 || d.dirmask == 5 {
			rel := dirNotRelevant
			if d.entryMask == 7 {
				rel = dirForAncestor
			}
			for s := 1; s <= 2; s++ {
				if d.dirmask&(1<<s) == 0 {
					sides[s].dirs.removed[d.path] = rel
				}
			}
		}
		m.dirMeta[d.path] = d
		if g := group[parentDir(d.path)]; g != 0 {
			group[d.path] = g
		} else if d.deferred {
			group[d.path] = d.trivialSide
		}
	}
	// git looks at deferred directories last, side 1's first: the order
	// of the changes decides ties between equally good renames.
	var groups [3][3][]FileChange
	for _, p := range m.order {
		ci := m.infos[p]
		g := group[parentDir(p)]
		mask := ci.mask
		if mask == 7 && (ci.filemask == 2 || ci.filemask == 4) {
			sides[3-ci.filemask>>1].dirs.removed[parentDir(p)] = dirForSelf
		}
		if ci.filemask == 7 {
			continue
		}
		for s := 1; s <= 2; s++ {
			bit := uint8(1) << s
			switch {
			case ci.filemask&1 != 0 && ci.filemask&bit == 0:
				switch {
				case ci.matchMask == 0:
					sides[s].relevant[p] = relevantContent
				case mask == 7:
					sides[s].relevant[p] = relevantLocation
				}
				groups[s][g] = append(groups[s][g], FileChange{Status: StatusDeleted, OldPath: p, OldMode: ci.stages[0].mode, OldOID: ci.stages[0].oid})
			case ci.filemask&1 == 0 && ci.filemask&bit != 0:
				groups[s][g] = append(groups[s][g], FileChange{Status: StatusAdded, NewPath: p, NewMode: ci.stages[s].mode, NewOID: ci.stages[s].oid})
			}
		}
	}
	for s := 1; s <= 2; s++ {
		sides[s].changes = slices.Concat(groups[s][:]...)
		m.noRelevant[s] = len(sides[s].relevant) == 0
	}
	return sides
}

// trivial reports whether git takes directory d from one side whole,
// without looking inside: it deferred d and that side needs no renames.
func (m *merger) trivial(d *dirEntry) bool {
	return d.deferred && m.noRelevant[d.trivialSide]
}

// walked reports whether git's merge looks at the entries of dir.
func (m *merger) walked(dir string) bool {
	for ; dir != ""; dir = parentDir(dir) {
		d := m.dirMeta[dir]
		if d == nil || m.trivial(d) {
			return false
		}
	}
	return true
}

// hidden reports whether p is inside a directory git takes from side s
// without looking inside.
func (m *merger) hidden(p string, s int) bool {
	for dir := parentDir(p); dir != ""; dir = parentDir(dir) {
		if d := m.dirMeta[dir]; d != nil && d.trivialSide == s && m.trivial(d) {
			return true
		}
	}
	return false
}

// detectSide finds one side's renames (detect_regular_renames). A side
// with no relevant source needs none; its additions still count for the
// other side's directory renames.
func (m *merger) detectSide(s int, side *sideRenames) error {
	if len(side.relevant) == 0 {
		for _, c := range side.changes {
			if c.Status == StatusAdded && !m.hidden(c.NewPath, s) {
				side.pairs = append(side.pairs, c)
			}
		}
		return nil
	}
	found, err := detectRenames(m.ctx, m.repo, side.changes, renameParams{
		minScore: scoreFromPercent(m.opts.RenameScore),
		limit:    m.opts.RenameLimit,
		relevant: side.relevant,
		dirs:     side.dirs,
	})
	if err != nil {
		return fmt.Errorf("merge: renames: %w", err)
	}
	for _, c := range found {
		if c.Status == StatusAdded || c.Status == StatusRenamed {
			side.pairs = append(side.pairs, c)
		}
	}
	return nil
}

// computeCollisions records, for side s, where the other side's directory
// renames would put each of s's added and renamed files.
func computeCollisions(side *sideRenames, dirRenames map[string]string) {
	side.collisions = map[string]*dirCollision{}
	for _, c := range side.pairs {
		dir, ok := renamedAncestor(c.NewPath, dirRenames)
		if !ok {
			continue
		}
		to := applyDirRename(c.NewPath, dir, dirRenames[dir])
		col := side.collisions[to]
		if col == nil {
			col = &dirCollision{}
			side.collisions[to] = col
		}
		if i, found := slices.BinarySearch(col.sources, c.NewPath); !found {
			col.sources = slices.Insert(col.sources, i, c.NewPath)
		}
	}
}

// collectRenames moves side s's added and renamed files that are inside
// a directory the other side renamed, and returns s's renames with their
// final paths (collect_renames).
func (m *merger) collectRenames(s int, sides *[3]sideRenames) ([]sideRename, error) {
	other := 3 - s
	dirRenames := sides[other].dirs.renames
	var out []sideRename
	for _, c := range sides[s].pairs {
		to, err := m.dirRenameTarget(c.NewPath, s, dirRenames, sides)
		if err != nil {
			return nil, err
		}
		if to != "" {
			if err := m.moveInfo(c.NewPath, to); err != nil {
				return nil, err
			}
		}
		if c.Status == StatusRenamed {
			out = append(out, sideRename{s, c.OldPath, cmp.Or(to, c.NewPath)})
		}
	}
	return out, nil
}

// dirRenameTarget returns where p, added or renamed to on side s, goes
// because the other side renamed a directory above it, or "" when it
// stays (check_for_directory_rename).
func (m *merger) dirRenameTarget(p string, s int, dirRenames map[string]string, sides *[3]sideRenames) (string, error) {
	if len(dirRenames) == 0 || sides[3-s].collisions[p] != nil {
		return "", nil
	}
	dir, ok := renamedAncestor(p, dirRenames)
	if !ok {
		return "", nil
	}
	newDir := dirRenames[dir]
	if _, ok := sides[s].dirs.renames[newDir]; ok {
		// s renamed the target away itself: following the other side
		// there would only make a rename/rename conflict.
		return "", nil
	}
	to := applyDirRename(p, dir, newDir)
	col := sides[s].collisions[to]
	if col.reported {
		return "", nil
	}
	inWay, err := m.pathInWay(to, uint8(1)<<s)
	if err != nil {
		return "", err
	}
	above, err := m.fileOnBothAbove(to)
	if err != nil {
		return "", err
	}
	switch {
	case above != "":
		// git moves the file below a file both sides have and then loses
		// it from its tree; the file stays where it is, in conflict.
		col.reported = true
		m.dirConflicts = append(m.dirConflicts, Conflict{Path: to, Kind: ConflictDirRenameCollision,
			Message: fmt.Sprintf("the file %s is in the way of directory renames that would move %s to %s", above, strings.Join(col.sources, ", "), to)})
		return "", nil
	case inWay:
		col.reported = true
		m.dirConflicts = append(m.dirConflicts, Conflict{Path: to, Kind: ConflictDirRenameCollision,
			Message: fmt.Sprintf("a file or directory at %s is in the way of directory renames that would move %s there", to, strings.Join(col.sources, ", "))})
		return "", nil
	case len(col.sources) > 1:
		col.reported = true
		m.dirConflicts = append(m.dirConflicts, Conflict{Path: to, Kind: ConflictDirRenameCollision,
			Message: fmt.Sprintf("directory renames would move %s all to %s", strings.Join(col.sources, ", "), to)})
		return "", nil
	}
	return to, nil
}

// fileOnBothAbove returns the nearest directory of p that both ours and
// theirs have as a file (not a directory), or "" when there is none: a
// file moved below it could not be written beside it.
func (m *merger) fileOnBothAbove(p string) (string, error) {
	for d := parentDir(p); d != ""; d = parentDir(d) {
		ents, err := m.entriesAt(d)
		if err != nil {
			return "", err
		}
		if ents[1] != nil && ents[2] != nil && !ents[1].Mode.IsDir() && !ents[2].Mode.IsDir() {
			return d, nil
		}
	}
	return "", nil
}

// pathInWay reports whether git's merge has something at p that a file
// of side mask sideMask cannot be moved onto (path_in_way): anything it
// has resolved already, or anything of that side.
func (m *merger) pathInWay(p string, sideMask uint8) (bool, error) {
	walked := m.walked(parentDir(p))
	if ci := m.infos[p]; ci != nil && (walked || ci.movedFrom != "") {
		return sideMask&(ci.filemask|ci.dirmask) != 0, nil
	}
	if !walked || m.moved[p] {
		return false, nil
	}
	ents, err := m.entriesAt(p)
	if err != nil {
		return false, err
	}
	var filemask, dirmask uint8
	for i, e := range ents {
		switch {
		case e == nil:
		case e.Mode.IsDir():
			dirmask |= 1 << i
		default:
			filemask |= 1 << i
		}
	}
	switch {
	case filemask|dirmask == 0:
		return false, nil
	case filemask|dirmask == 7 && *ents[0] == *ents[1] && *ents[0] == *ents[2]:
		return true, nil // the same on all sides
	case filemask == 7:
		return true, nil // resolved while walking
	case filemask == 0:
		if d := m.dirMeta[p]; d != nil && m.trivial(d) {
			return true, nil
		}
		return sideMask&dirmask != 0, nil
	}
	return false, nil
}

// entriesAt looks p up in the base, ours and theirs.
func (m *merger) entriesAt(p string) ([3]*gitstore.Entry, error) {
	var out [3]*gitstore.Entry
	for i, t := range m.trees {
		if t.IsZero() {
			continue
		}
		e, err := m.repo.Lookup(m.ctx, t, p)
		switch {
		case errors.Is(err, gitstore.ErrNotFound):
		case err != nil:
			return out, fmt.Errorf("merge: %w", err)
		default:
			out[i] = &e
		}
	}
	return out, nil
}

// moveInfo moves the one-sided file at from to to, where a directory
// rename of the other side puts it (apply_directory_rename_modifications).
func (m *merger) moveInfo(from, to string) error {
	ci := m.infos[from]
	delete(m.infos, from)
	m.moved[from] = true
	m.reorder = true
	// Resolved by removal: the walk's record of from keeps it, so that
	// ours's file there, if any, leaves the merged tree.
	old := *ci
	ci.done, ci.clean, ci.result = true, true, stage{}
	ci = &old
	side := int(ci.filemask >> 1)
	if ni := m.infos[to]; ni != nil {
		ni.filemask |= ci.filemask
		if ni.dirmask != 0 {
			ni.df = true
		}
		ni.stages[side] = ci.stages[side]
		ni.pathnames[side] = ci.pathnames[side]
		ci = ni
	} else {
		ents, err := m.entriesAt(to)
		if err != nil {
			return err
		}
		var dirmask uint8
		for i, e := range ents {
			if e != nil && e.Mode.IsDir() {
				dirmask |= 1 << i
			}
		}
		ci = &pathInfo{
			path: to, stages: ci.stages, pathnames: ci.pathnames,
			filemask: ci.filemask, dirmask: dirmask, df: dirmask != 0,
		}
		m.infos[to] = ci
		m.order = append(m.order, to)
		m.visits = append(m.visits, visit{path: to, info: ci})
	}
	ci.movedFrom = from
	if m.opts.DirectoryRenames != DirRenamesApply {
		ci.pathConfl = true
		if ci.kind == "" {
			ci.kind = ConflictFileLocation
		}
	}
	return nil
}

func sortedKeys[V any](mp map[string]V) []string {
	keys := make([]string, 0, len(mp))
	for k := range mp {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// addedOnly reports whether side s has a file that neither the base nor
// the other side has as a file: in a directory the other side removed, a
// file s added (the pre-scan of merge-ort's traverse_trees_wrapper).
func addedOnly(lists [3][]gitstore.TreeEntry, s int) bool {
	for _, e := range lists[s] {
		if !e.Mode.IsDir() && !hasFile(lists[0], e.Name) && !hasFile(lists[3-s], e.Name) {
			return true
		}
	}
	return false
}

// hasFile reports whether entries, in name order, have a file name.
func hasFile(entries []gitstore.TreeEntry, name string) bool {
	i, ok := slices.BinarySearchFunc(entries, name, func(e gitstore.TreeEntry, n string) int { return strings.Compare(e.Name, n) })
	return ok && !entries[i].Mode.IsDir()
}

// resolveDeferred settles the directories collect deferred, as merge-ort's
// handle_deferred_entries does: a side that needs rename detection has
// its deferred directories walked, since renames may pair files inside
// them; otherwise each is taken whole from the side that changed it,
// without reading it.
func (m *merger) resolveDeferred() error {
	if len(m.pending) == 0 {
		return nil
	}
	var needs [3]bool
	if !m.opts.NoRenames {
		for _, p := range m.order {
			ci := m.infos[p]
			for s := 1; s <= 2; s++ {
				deleted := ci.filemask&1 != 0 && ci.filemask&(1<<s) == 0
				if deleted && (ci.matchMask == 0 || ci.mask == 7) {
					needs[s] = true
				}
			}
		}
	}
	pending := m.pending
	m.pending = nil
	for s := 1; s <= 2; s++ {
		m.walkAll[s] = needs[s]
		for _, i := range pending {
			d := m.dirs[i] // a copy: walking appends to m.dirs
			switch {
			case d.trivialSide != s:
			case needs[s]:
				if err := m.collect(d.sub[0], d.sub[1], d.sub[2], d.path, d.entryMask); err != nil {
					return err
				}
			case s == 2: // theirs changed it and ours kept the base's (for s == 1 the merge already starts from ours)
				v := visit{path: d.path}
				if !d.sub[2].IsZero() {
					v.early = stage{gitstore.ModeDir, d.sub[2]}
				} else {
					m.takenWhole = append(m.takenWhole, d.path)
				}
				m.visits = append(m.visits, v)
			}
		}
	}
	// finish wants the walk's order: paths below a directory after it.
	slices.SortStableFunc(m.visits, func(a, b visit) int { return comparePaths(a.path, b.path) })
	return nil
}
