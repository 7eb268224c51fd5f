package merge

import (
	"context"
	"path"
	"slices"

	"github.com/sessiond/sessiond/gitstore"
)

// Rename detection as git's diffcore-rename does it: exact renames by
// blob id first, then sources and destinations with the same unique base
// name at a higher threshold, then every remaining pair by a similarity
// score computed the way git does (counting matching chunks of up to 64
// bytes or one line), taking the best pairs first.

// maxScore is git's similarity scale (MAX_SCORE).
const maxScore = 60000

// candidatesPerDst is how many sources git keeps per destination.
const candidatesPerDst = 4

func scoreFromPercent(p int) int {
	if p <= 0 {
		p = 50
	}
	return p * maxScore / 100
}

type renameParams struct {
	minScore    int
	limit       int // sources × destinations is capped at limit²
	renameEmpty bool
	copies      bool
	// relevant, when set, limits detection beyond exact renames to these
	// sources (a merge's relevant_sources): content-relevant ones, whose
	// other side changed, and location-relevant ones, needed only to find
	// where their directory went.
	relevant map[string]relevance
	// dirs, when set, counts where the files of removed directories went
	// (a merge's directory rename detection); see dirRenameInfo.
	dirs *dirRenameInfo
}

// relevance says why a merge needs a source's rename (git's
// file_rename_relevance).
type relevance uint8

const (
	relevantNoMore   relevance = iota // needed no more
	relevantContent                   // the other side changed the file
	relevantLocation                  // needed for a directory rename
)

var emptyBlob = gitstore.HashObject(gitstore.KindBlob, nil)

type similarity struct {
	ctx   context.Context
	repo  *gitstore.Repo
	spans map[gitstore.OID]spanCounts
	sizes map[gitstore.OID]int
	err   error
}

// spanCounts counts the hashes of a blob's chunks (diffcore-delta).
type spanCounts map[uint32]uint32

func (s *similarity) size(id gitstore.OID) int {
	if n, ok := s.sizes[id]; ok {
		return n
	}
	n, err := s.repo.BlobSize(s.ctx, id)
	if err != nil && s.err == nil {
		s.err = err
	}
	s.sizes[id] = int(n)
	return int(n)
}

func (s *similarity) counts(id gitstore.OID) spanCounts {
	if c, ok := s.spans[id]; ok {
		return c
	}
	data, err := s.repo.ReadBlob(s.ctx, id)
	if err != nil && s.err == nil {
		s.err = err
	}
	c := hashChunks(data)
	s.spans[id] = c
	return c
}

// hashChunks splits data into chunks ending at a newline or after 64
// bytes and counts the bytes per chunk hash. As in git, CR of CRLF is
// skipped in text and a last chunk without a newline is not counted.
func hashChunks(data []byte) spanCounts {
	const hashBase = 107927
	text := !IsBinary(data)
	out := make(spanCounts)
	var acc1, acc2 uint32
	n := 0
	for i := 0; i < len(data); i++ {
		c := uint32(data[i])
		if text && c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			continue
		}
		old1 := acc1
		acc1 = (acc1 << 7) ^ (acc2 >> 25)
		acc2 = (acc2 << 7) ^ (old1 >> 25)
		acc1 += c
		n++
		if n < 64 && c != '\n' {
			continue
		}
		out[(acc1+acc2*0x61)%hashBase] += uint32(n)
		n = 0
		acc1, acc2 = 0, 0
	}
	return out
}

// score estimates how much of dst comes from src (estimate_similarity).
func (s *similarity) score(src, dst *FileChange, minScore int) int {
	if !src.OldMode.IsBlob() || !dst.NewMode.IsBlob() || src.OldMode == gitstore.ModeSymlink || dst.NewMode == gitstore.ModeSymlink {
		return 0
	}
	ss, ds := s.size(src.OldOID), s.size(dst.NewOID)
	maxSize, baseSize := max(ss, ds), min(ss, ds)
	if maxSize*(maxScore-minScore) < (maxSize-baseSize)*maxScore {
		return 0
	}
	sc, dc := s.counts(src.OldOID), s.counts(dst.NewOID)
	copied := 0
	for h, n := range sc {
		copied += int(min(n, dc[h]))
	}
	if ds == 0 {
		return 0
	}
	return copied * maxScore / maxSize
}

// detectRenames pairs deleted and added files of changes into renames
// (and copies when asked) and returns the new list, unsorted.
func detectRenames(ctx context.Context, repo *gitstore.Repo, changes []FileChange, p renameParams) ([]FileChange, error) {
	var srcs, dsts, modified []int
	for i := range changes {
		c := &changes[i]
		switch c.Status {
		case StatusDeleted:
			if c.OldMode != gitstore.ModeGitlink && (p.renameEmpty || c.OldOID != emptyBlob) {
				srcs = append(srcs, i)
			}
		case StatusAdded:
			if c.NewMode != gitstore.ModeGitlink && (p.renameEmpty || c.NewOID != emptyBlob) {
				dsts = append(dsts, i)
			}
		case StatusModified, StatusModeChanged:
			modified = append(modified, i)
		}
	}
	if len(dsts) == 0 || (len(srcs) == 0 && !p.copies) {
		return changes, nil
	}
	sim := &similarity{ctx: ctx, repo: repo, spans: map[gitstore.OID]spanCounts{}, sizes: map[gitstore.OID]int{}}
	srcOf := make(map[int]int)   // dst index -> src index
	scoreOf := make(map[int]int) // dst index -> score
	used := make(map[int]bool)   // src index used by a rename
	record := func(d, s, score int) {
		srcOf[d] = s
		scoreOf[d] = score
		used[s] = true
	}
	base := func(pth string) string { return path.Base(pth) }

	// Exact renames: same blob (and, for symlinks, same mode).
	byID := make(map[gitstore.OID][]int)
	for _, s := range srcs {
		byID[changes[s].OldOID] = append(byID[changes[s].OldOID], s)
	}
	for _, d := range dsts {
		dc := &changes[d]
		best, bestScore := -1, -1
		for _, s := range byID[dc.NewOID] {
			sc := &changes[s]
			if (fileType(sc.OldMode) != gitstore.ModeFile || fileType(dc.NewMode) != gitstore.ModeFile) && sc.OldMode != dc.NewMode {
				continue
			}
			if used[s] {
				continue
			}
			score := 1
			if base(sc.OldPath) == base(dc.NewPath) {
				score++
			}
			if score > bestScore {
				best, bestScore = s, score
				if score == 2 {
					break
				}
			}
		}
		if best >= 0 {
			record(d, best, maxScore)
		}
	}

	relevant := func(s int) bool {
		if p.relevant == nil {
			return true
		}
		_, ok := p.relevant[changes[s].OldPath]
		return ok
	}
	renamed := func(d int) bool { _, ok := srcOf[d]; return ok }
	var restSrc, restDst []int
	for _, s := range srcs {
		if !used[s] {
			restSrc = append(restSrc, s)
		}
	}
	for _, d := range dsts {
		if !renamed(d) {
			restDst = append(restDst, d)
		}
	}
	dri := p.dirs
	var byPath map[string]int // destinations not renamed exactly
	if dri != nil {
		for d, s := range srcOf {
			dri.update(changes[s].OldPath, changes[d].NewPath)
		}
		dri.makeGuesses()
		byPath = make(map[string]int, len(restDst))
		for _, d := range restDst {
			byPath[changes[d].NewPath] = d
		}
	}

	// Sources and destinations with the same base name, at a higher
	// threshold: a unique pair, or, for a name used more than once, the
	// destination where the source's directory seems to have gone.
	if len(restSrc) > 0 && len(restDst) > 0 {
		minBase := p.minScore + (maxScore-p.minScore)/2
		srcNames, dstNames := map[string]int{}, map[string]int{}
		for _, s := range restSrc {
			n := base(changes[s].OldPath)
			if _, dup := srcNames[n]; dup {
				srcNames[n] = -1
			} else {
				srcNames[n] = s
			}
		}
		for _, d := range restDst {
			n := base(changes[d].NewPath)
			if _, dup := dstNames[n]; dup {
				dstNames[n] = -1
			} else {
				dstNames[n] = d
			}
		}
		for _, s := range restSrc {
			if !relevant(s) {
				continue
			}
			n := base(changes[s].OldPath)
			d, ok := dstNames[n]
			if !ok {
				continue
			}
			if d < 0 || srcNames[n] < 0 {
				d = dri.guess(changes[s].OldPath, byPath)
			}
			if d < 0 || renamed(d) {
				continue
			}
			if score := sim.score(&changes[s], &changes[d], minBase); score >= minBase {
				record(d, s, score)
				dri.update(changes[s].OldPath, changes[d].NewPath)
			}
		}
	}
	restSrc = slices.DeleteFunc(restSrc, func(s int) bool { return used[s] || !relevant(s) })
	restDst = slices.DeleteFunc(restDst, renamed)
	if dri != nil && p.relevant != nil {
		restSrc = dri.cullKnown(changes, restSrc, p.relevant)
	}

	// Everything else, best pairs first.
	type cand struct{ dst, src, score, nameScore int }
	if len(restSrc) > 0 && len(restDst) > 0 && len(restSrc)*len(restDst) <= p.limit*p.limit {
		var mx []cand
		for _, d := range restDst {
			var top []cand
			for _, s := range restSrc {
				score := sim.score(&changes[s], &changes[d], p.minScore)
				if score < p.minScore {
					continue
				}
				ns := 0
				if base(changes[s].OldPath) == base(changes[d].NewPath) {
					ns = 1
				}
				c := cand{d, s, score, ns}
				if len(top) < candidatesPerDst {
					top = append(top, c)
					continue
				}
				worst := 0
				for k := range top {
					if top[k].score < top[worst].score {
						worst = k
					}
				}
				if top[worst].score < score {
					top[worst] = c
				}
			}
			mx = append(mx, top...)
		}
		slices.SortStableFunc(mx, func(a, b cand) int {
			if a.score != b.score {
				return b.score - a.score
			}
			return b.nameScore - a.nameScore
		})
		for _, c := range mx {
			if renamed(c.dst) || used[c.src] {
				continue
			}
			record(c.dst, c.src, c.score)
			dri.update(changes[c.src].OldPath, changes[c.dst].NewPath)
		}
	}
	if sim.err != nil {
		return nil, sim.err
	}

	// Copies: remaining destinations from any deleted or modified file,
	// without using the source up.
	copyOf := map[int]int{}
	if p.copies {
		pool := append(slices.Clone(srcs), modified...)
		for _, d := range dsts {
			if _, done := srcOf[d]; done {
				continue
			}
			best, bestScore := -1, p.minScore-1
			for _, s := range pool {
				score := maxScore
				if changes[s].OldOID != changes[d].NewOID {
					score = sim.score(&changes[s], &changes[d], p.minScore)
				}
				if score > bestScore {
					best, bestScore = s, score
				}
			}
			if best >= 0 {
				copyOf[d] = best
				scoreOf[d] = bestScore
			}
		}
		if sim.err != nil {
			return nil, sim.err
		}
	}

	out := make([]FileChange, 0, len(changes))
	for i, c := range changes {
		if c.Status == StatusDeleted && used[i] {
			continue
		}
		if s, ok := srcOf[i]; ok {
			c = pairUp(changes[s], c, StatusRenamed, scoreOf[i])
		} else if s, ok := copyOf[i]; ok {
			c = pairUp(changes[s], c, StatusCopied, scoreOf[i])
		}
		out = append(out, c)
	}
	return out, nil
}

func pairUp(src, dst FileChange, st Status, score int) FileChange {
	return FileChange{
		Status: st, OldPath: src.OldPath, NewPath: dst.NewPath,
		OldMode: src.OldMode, NewMode: dst.NewMode, OldOID: src.OldOID, NewOID: dst.NewOID,
		Similarity: score * 100 / maxScore,
	}
}
