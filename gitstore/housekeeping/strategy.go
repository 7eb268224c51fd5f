package housekeeping

import (
	"slices"
	"strings"
	"time"
)

// The strategy looks at what the object directory holds and decides what
// to do. It does no I/O, so it is tested on its own.

// PackInfo is one pack as the strategy sees it.
type PackInfo struct {
	// Name is the pack's base name, "pack-<checksum>".
	Name    string
	Size    int64 // bytes of the .pack
	Objects int
	// Own: the pack looks like one sessiond writes: every object whole
	// (no deltas) and no .keep, .promisor, .bitmap or .mtimes beside it.
	// Only such packs are ever merged; git's own packs are git gc's.
	Own bool
	// Made is when the pack was put in place: its index's mtime (git and
	// sessiond freshen a pack by touching the .pack; nobody touches an
	// index).
	Made time.Time
	// CoveredBy names another own pack that holds every object of this
	// own pack and ranks above it (see MarkCovered), "" if none: this pack is
	// superseded, merged already by some process, and only waits to be
	// deleted.
	CoveredBy string
}

// Debris is a file a crash may have left: a temporary object, pack or
// index file (tmp_obj_*, tmp_pack_*, tmp_idx_*, .tmp-*), or a pack
// without its index or an index without its pack.
type Debris struct {
	Path    string // relative to the objects directory
	ModTime time.Time
}

// State is what the object directory holds (Repository.State lists it).
type State struct {
	Now    time.Time
	Packs  []PackInfo
	Loose  int // loose objects
	Debris []Debris
}

// Plan is what a housekeeping run does.
type Plan struct {
	// MergePacks are merged into one new pack (with the loose objects
	// when PackLoose), after which they are deleted.
	MergePacks []string
	// PackLoose packs every loose object and deletes the loose files.
	PackLoose bool
	// RemoveDebris lists debris (relative to the objects directory) old
	// enough to be no writer's work in progress.
	RemoveDebris []string
	// DeletePacks are superseded packs (CoveredBy set) to delete now.
	DeletePacks []string
	// MergedWait is how many of MergePacks (the first, in name order) may
	// wait beside the new pack; the others are deleted as soon as it is
	// in place.
	MergedWait int
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool {
	return len(p.MergePacks) == 0 && !p.PackLoose && len(p.RemoveDebris) == 0 && len(p.DeletePacks) == 0
}

// HeuristicStrategy keeps a repository under PackLimit packs between git
// gc runs. Once MergeTrigger own packs exist, it merges them as `git
// repack --geometric=2` would: packs are sorted by object count, the
// largest that form a progression in which each holds at least twice the
// objects of the next smaller one stay, and the rest are rolled into one,
// so the own packs stay logarithmic in number and each object is rewritten
// a logarithmic number of times. When the repository holds more than half
// of PackLimit live packs, every own pack is merged, so the limit keeps
// room for what writers add before the next run (a repository whose own
// git packs fill half the limit needs git gc, which merges them). Loose objects are packed once
// LooseLimit exist. Debris older than DebrisGrace is removed; younger
// debris may be another writer's file mid-write.
//
// Superseded packs (merged already, by this process or another, perhaps
// one killed since) are neither merged again nor counted as live: each is
// deleted once the pack covering it has been in place for RetireDelay, so
// a git command that listed the packs before the cover appeared (git
// fsck) still finds it. The wait holds at most a quarter of PackLimit
// less the live packs the plan leaves: when more would wait (restarts or
// merges faster than the delay), those whose cover is oldest go at once
// (the packs a merge just superseded last), so a run leaves at most a
// quarter of the limit or the live packs, and the rest is room for the
// packs written before the next run, however slow that run is to come.
type HeuristicStrategy struct {
	PackLimit    int           // default 50, git's gc.autoPackLimit
	MergeTrigger int           // default 16
	MaxPackBytes int64         // own packs this large are left to git gc; default 256 MiB
	LooseLimit   int           // default 256
	DebrisGrace  time.Duration // default 1 hour
	// RetireDelay is how long a superseded pack waits after its cover
	// appeared (default 1 minute; negative: not at all).
	RetireDelay time.Duration
}

// WithDefaults is s with every zero field set to its default.
func (s HeuristicStrategy) WithDefaults() HeuristicStrategy {
	if s.PackLimit <= 0 {
		s.PackLimit = 50
	}
	if s.MergeTrigger <= 0 {
		s.MergeTrigger = 16
	}
	if s.MaxPackBytes <= 0 {
		s.MaxPackBytes = 256 << 20
	}
	if s.LooseLimit <= 0 {
		s.LooseLimit = 256
	}
	if s.DebrisGrace <= 0 {
		s.DebrisGrace = time.Hour
	}
	if s.RetireDelay == 0 {
		s.RetireDelay = time.Minute
	}
	return s
}

// Plan decides what to do with st.
func (s HeuristicStrategy) Plan(st State) Plan {
	s = s.WithDefaults()
	var p Plan
	for _, d := range st.Debris {
		if st.Now.Sub(d.ModTime) >= s.DebrisGrace {
			p.RemoveDebris = append(p.RemoveDebris, d.Path)
		}
	}
	var own, live, waiting []PackInfo
	for _, pk := range st.Packs {
		switch {
		case pk.CoveredBy != "":
			waiting = append(waiting, pk)
		case pk.Own && pk.Size < s.MaxPackBytes:
			own = append(own, pk)
			fallthrough
		default:
			live = append(live, pk)
		}
	}
	switch {
	case len(live) > s.PackLimit/2 && len(own) > 1:
		for _, pk := range own {
			p.MergePacks = append(p.MergePacks, pk.Name)
		}
	case len(own) >= s.MergeTrigger:
		p.MergePacks = geometricRollup(own, 2)
	}
	p.PackLoose = st.Loose >= s.LooseLimit
	if len(p.MergePacks) == 1 && !p.PackLoose {
		p.MergePacks = nil // one pack into one pack changes nothing
	}
	slices.Sort(p.MergePacks)
	p.DeletePacks, p.MergedWait = s.retire(st, live, waiting, p)
	return p
}

// retire picks the superseded packs to delete: those whose cover has been
// in place for RetireDelay, and, oldest cover first, as many more as the
// wait may not hold. The packs p merges would wait after it, youngest, so
// they take the room first; it returns how many of them may.
func (s HeuristicStrategy) retire(st State, live, waiting []PackInfo, p Plan) ([]string, int) {
	made := make(map[string]time.Time, len(st.Packs))
	for _, pk := range st.Packs {
		made[pk.Name] = pk.Made
	}
	liveAfter := len(live) - len(p.MergePacks)
	if len(p.MergePacks) > 0 || p.PackLoose {
		liveAfter++ // the new pack
	}
	room := s.PackLimit/4 - liveAfter
	mergedWait := min(max(room, 0), len(p.MergePacks))
	if s.RetireDelay < 0 {
		mergedWait = 0
	}
	room -= len(p.MergePacks)
	slices.SortFunc(waiting, func(a, b PackInfo) int {
		if c := made[a.CoveredBy].Compare(made[b.CoveredBy]); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var out []string
	for i, pk := range waiting {
		if st.Now.Sub(made[pk.CoveredBy]) >= s.RetireDelay || len(waiting)-i > room {
			out = append(out, pk.Name)
		}
	}
	slices.Sort(out)
	return out, mergedWait
}

// geometricRollup returns the packs git's repack --geometric=factor would
// roll up: sorted by object count, the packs below the split.
func geometricRollup(packs []PackInfo, factor int) []string {
	ps := slices.Clone(packs)
	slices.SortStableFunc(ps, func(a, b PackInfo) int { return a.Objects - b.Objects })
	weight := func(i int) int64 { return int64(max(ps[i].Objects, 1)) }
	i := len(ps) - 1
	for ; i > 0; i-- {
		if weight(i) < int64(factor)*weight(i-1) {
			break
		}
	}
	split := i
	if split > 0 {
		split++ // the larger of the pair that broke the progression rolls up too
	}
	var total int64
	for j := 0; j < split; j++ {
		total += weight(j)
	}
	for ; split < len(ps); split++ {
		if weight(split) >= int64(factor)*total {
			break
		}
		total += weight(split)
	}
	if split < 2 {
		return nil
	}
	out := make([]string, split)
	for j := range split {
		out[j] = ps[j].Name
	}
	return out
}

// MarkCovered sets CoveredBy on every own pack whose objects another own
// pack holds (subset(p, q): every object of p is in q), one that ranks
// above it: more objects, or as many (the same objects) and a greater
// name. The rank is a strict total order on what never changes under a
// pack's name (its content), so every process at every moment ranks
// alike, no two packs cover each other, and every covered pack's objects
// are in a pack that is not covered, which no run deletes: deleting every
// covered pack, in any process, loses nothing. Of several covers, the one
// in place longest is named, so the wait ends soonest.
func MarkCovered(packs []PackInfo, subset func(p, q string) bool) {
	for i, p := range packs {
		if !p.Own || p.Objects == 0 {
			continue
		}
		best := -1
		for c, q := range packs {
			if c == i || !q.Own || q.Objects < p.Objects || q.Objects == p.Objects && q.Name < p.Name {
				continue // not above p
			}
			if best >= 0 && (packs[best].Made.Before(q.Made) || packs[best].Made.Equal(q.Made) && packs[best].Name < q.Name) {
				continue // a better cover is known already
			}
			if subset(p.Name, q.Name) {
				best = c
			}
		}
		if best >= 0 {
			packs[i].CoveredBy = packs[best].Name
		}
	}
}
