package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/sessiond/sessiond/internal/durable"
)

// HousekeepReport says what one housekeeping run did.
type HousekeepReport struct {
	PacksBefore   int // packs with an index before the run
	PacksMerged   int // packs merged into the new pack
	PacksDeleted  int // superseded packs deleted (merged by this or an earlier run, of any process)
	LoosePacked   int // loose objects packed and deleted
	DebrisRemoved int
	NewPack       string // base name of the pack written, if any
}

// Housekeep looks at the object directory, asks the strategy what to do
// (Options.Housekeeping, by default HeuristicStrategy's defaults) and does
// it: removes old debris, deletes superseded packs whose wait is over,
// merges own packs and packs loose objects into one new pack. One run at
// a time per Repo; a run that finds another in progress returns at once
// with an empty report.
//
// It never loses an object: a pack or loose file is deleted only after a
// pack holding every object it held is durable (written, fsynced, renamed
// into place, its directory fsynced). A file that vanishes while it is
// read (another process or git gc got there first) aborts the merge
// without deleting anything.
func (r *Repo) Housekeep(ctx context.Context) (HousekeepReport, error) {
	if !r.hkMu.TryLock() {
		return HousekeepReport{}, nil
	}
	defer r.hkMu.Unlock()
	st, own, err := r.repoState(ctx)
	if err != nil {
		return HousekeepReport{}, fmt.Errorf("housekeep: %w", err)
	}
	plan := r.opts.Housekeeping.Plan(st)
	rep := HousekeepReport{PacksBefore: len(st.Packs)}
	objDir := filepath.Join(r.gitDir, "objects")
	for _, d := range plan.RemoveDebris {
		if err := os.Remove(filepath.Join(objDir, d)); err == nil {
			rep.DebrisRemoved++
		}
	}
	if r.gitGCRunning(st.Now) {
		return rep, nil // git gc repacks everything itself
	}
	if len(plan.DeletePacks) > 0 {
		n, err := r.deletePacks(plan.DeletePacks)
		rep.PacksDeleted = n
		if err != nil {
			return rep, fmt.Errorf("housekeep: %w", err)
		}
	}
	if len(plan.MergePacks) == 0 && !plan.PackLoose {
		return rep, nil
	}
	ids, objs, loose, err := r.gatherMerge(ctx, plan, own)
	if err != nil || len(ids) == 0 {
		if errors.Is(err, errVanished) {
			err = nil // someone else is consolidating: next time
		}
		return rep, err
	}
	name, err := r.writePack(ids, objs)
	if err != nil {
		return rep, fmt.Errorf("housekeep: %w", err)
	}
	rep.NewPack = name
	packDir := filepath.Join(objDir, "pack")
	if r.retired == nil {
		r.retired = map[string]bool{}
	}
	var now []string
	for i, p := range plan.MergePacks {
		if p == name {
			continue // the same objects in the same order: it is the new pack
		}
		rep.PacksMerged++
		if i >= plan.MergedWait {
			now = append(now, p) // no room to wait
			continue
		}
		// Superseded now: the next run that finds the new pack old
		// enough, in this process or any other, deletes it.
		r.retired[p] = true
	}
	if len(now) > 0 {
		n, err := r.deletePacks(now)
		rep.PacksDeleted += n
		if err != nil {
			return rep, fmt.Errorf("housekeep: %w", err)
		}
	}
	for _, id := range loose {
		if err := os.Remove(r.loosePath(id)); err == nil {
			rep.LoosePacked++
		}
	}
	if err := durable.SyncDir(packDir); err != nil {
		return rep, fmt.Errorf("housekeep: %w", err)
	}
	return rep, nil
}

// deletePacks deletes superseded packs and reports how many. The pack
// directory is synced first, so the packs covering them are durable
// before any deletion is. The deletions happen while this process's
// storages are all held, so none of its readers lists the directory half
// way through them (a go-git storage fails its whole pack index when one
// listed index is gone by the time it opens it); other processes' readers
// list again when that happens. r.hkMu must be held.
func (r *Repo) deletePacks(names []string) (int, error) {
	packDir := filepath.Join(r.gitDir, "objects", "pack")
	if err := durable.SyncDir(packDir); err != nil {
		return 0, err
	}
	n := 0
	r.swapStorages(context.Background(), true, func() {
		for _, name := range names {
			base := filepath.Join(packDir, name)
			// The index first, as git's repack does: a reader lists packs
			// by their index (git) or sees only packs with one (objectFS).
			err := os.Remove(base + ".idx")
			for _, ext := range []string{".rev", ".pack"} {
				_ = os.Remove(base + ext)
			}
			r.packs.forget(base + ".pack")
			delete(r.retired, name)
			if err == nil {
				n++
			}
		}
	})
	if n > 0 {
		if err := durable.SyncDir(packDir); err != nil {
			return n, err
		}
	}
	return n, nil
}

// deleteRetired deletes, at Close, the packs this Repo merged that are
// still covered (a graceful stop leaves none of its own waiting). r.hkMu
// must be held.
func (r *Repo) deleteRetired() {
	if len(r.retired) == 0 {
		return
	}
	st, _, err := r.repoState(context.Background())
	if err != nil || r.gitGCRunning(st.Now) {
		return
	}
	var names []string
	for _, pk := range st.Packs {
		if r.retired[pk.Name] && pk.CoveredBy != "" {
			names = append(names, pk.Name)
		}
	}
	_, _ = r.deletePacks(names)
}

// gitGCRunning reports whether git gc holds its lock (gc.pid), which it
// keeps while it repacks; git itself treats one older than 12 hours as
// stale.
func (r *Repo) gitGCRunning(now time.Time) bool {
	fi, err := os.Stat(filepath.Join(r.gitDir, "gc.pid"))
	return err == nil && now.Sub(fi.ModTime()) < 12*time.Hour
}

var errVanished = errors.New("file vanished during housekeeping")

// ownPackScan is what repoState learnt of an own pack: its objects.
type ownPackScan struct {
	entries []packLoc
}

// repoState lists the object directory: packs (scanning the small ones
// for deltas, to tell own packs from git's), loose objects and debris.
func (r *Repo) repoState(ctx context.Context) (RepoState, map[string]ownPackScan, error) {
	objDir := filepath.Join(r.gitDir, "objects")
	packDir := filepath.Join(objDir, "pack")
	st := RepoState{Now: time.Now()}
	own := map[string]ownPackScan{}
	entries, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return st, nil, err
		}
		n := e.Name()
		base, ext, _ := strings.Cut(n, ".")
		switch {
		case isTempName(n):
			st.Debris = appendDebris(st.Debris, filepath.Join("pack", n), e)
		case strings.HasPrefix(n, "pack-") && ext == "pack" && !names[base+".idx"]:
			st.Debris = appendDebris(st.Debris, filepath.Join("pack", n), e)
		case strings.HasPrefix(n, "pack-") && ext == "idx" && !names[base+".pack"]:
			st.Debris = appendDebris(st.Debris, filepath.Join("pack", n), e)
		case strings.HasPrefix(n, "pack-") && ext == "idx":
			path := filepath.Join(packDir, base+".pack")
			if checkPack(path, filepath.Join(packDir, n)) != nil {
				continue // skipped by readers; not ours to delete
			}
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			ii, err := e.Info()
			if err != nil {
				continue
			}
			pi := PackInfo{Name: base, Size: fi.Size(), Made: ii.ModTime()}
			special := names[base+".keep"] || names[base+".promisor"] || names[base+".bitmap"] || names[base+".mtimes"]
			if !special && fi.Size() < r.opts.Housekeeping.withDefaults().MaxPackBytes {
				if scan, ok := scanOwnPack(path, filepath.Join(packDir, n)); ok {
					pi.Own = true
					pi.Objects = len(scan.entries)
					own[base] = scan
				}
			}
			st.Packs = append(st.Packs, pi)
		}
	}
	markCovered(st.Packs, own)
	// Loose objects and their temporary files, and git's older layout's
	// temporary files directly under objects/.
	top, err := os.ReadDir(objDir)
	if err != nil {
		return st, nil, err
	}
	for _, d := range top {
		n := d.Name()
		if !d.IsDir() {
			if isTempName(n) {
				st.Debris = appendDebris(st.Debris, n, d)
			}
			continue
		}
		if len(n) != 2 || !isHex(n) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objDir, n))
		if err != nil {
			continue
		}
		for _, f := range files {
			switch fn := f.Name(); {
			case isTempName(fn):
				st.Debris = appendDebris(st.Debris, filepath.Join(n, fn), f)
			case len(fn) == 2*OIDSize-2 && isHex(fn):
				st.Loose++
			}
		}
	}
	return st, own, nil
}

// markCovered sets CoveredBy on every own pack whose objects another own
// pack holds, one that ranks above it: more objects, or as many (the same
// objects) and a greater name. The rank is a strict total order on what
// never changes under a pack's name (its content), so every process at
// every moment ranks alike, no two packs cover each other, and every
// covered pack's objects are in a pack that is not covered, which no run
// deletes: deleting every covered pack, in any process, loses nothing.
// Of several covers, the one in place longest is named, so the wait ends
// soonest.
func markCovered(packs []PackInfo, own map[string]ownPackScan) {
	byName := make(map[string]int, len(packs))
	for i, pk := range packs {
		byName[pk.Name] = i
	}
	above := func(a, b int) bool { // a ranks above b
		pa, pb := packs[a], packs[b]
		if pa.Objects != pb.Objects {
			return pa.Objects > pb.Objects
		}
		return pa.Name > pb.Name
	}
	holders := map[OID][]int{}
	for name, scan := range own {
		i := byName[name]
		for _, e := range scan.entries {
			holders[e.id] = append(holders[e.id], i)
		}
	}
	for name, scan := range own {
		i := byName[name]
		if len(scan.entries) == 0 {
			continue
		}
		var cands []int
		for _, c := range holders[scan.entries[0].id] {
			if c != i && above(c, i) {
				cands = append(cands, c)
			}
		}
		for _, e := range scan.entries[1:] {
			if len(cands) == 0 {
				break
			}
			hs := holders[e.id]
			cands = slices.DeleteFunc(cands, func(c int) bool { return !slices.Contains(hs, c) })
		}
		best := -1
		for _, c := range cands {
			if best < 0 || packs[c].Made.Before(packs[best].Made) || packs[c].Made.Equal(packs[best].Made) && packs[c].Name < packs[best].Name {
				best = c
			}
		}
		if best >= 0 {
			packs[i].CoveredBy = packs[best].Name
		}
	}
}

// isTempName: git's temporary object, pack and index files, and the
// temporary files durable.WriteFile makes.
func isTempName(n string) bool {
	return strings.HasPrefix(n, "tmp_") || strings.HasPrefix(n, ".tmp-")
}

func appendDebris(ds []Debris, rel string, e fs.DirEntry) []Debris {
	fi, err := e.Info()
	if err != nil {
		return ds
	}
	return append(ds, Debris{Path: rel, ModTime: fi.ModTime()})
}

// scanOwnPack reads a pack's index and each entry's header. It reports
// false unless every object is stored whole, as sessiond writes them.
func scanOwnPack(packPath, idxPath string) (ownPackScan, bool) {
	ib, err := os.ReadFile(idxPath)
	if err != nil {
		return ownPackScan{}, false
	}
	mi := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(ib)).Decode(mi); err != nil {
		return ownPackScan{}, false
	}
	f, err := os.Open(packPath)
	if err != nil {
		return ownPackScan{}, false
	}
	defer f.Close()
	it, err := mi.EntriesByOffset()
	if err != nil {
		return ownPackScan{}, false
	}
	defer it.Close()
	var scan ownPackScan
	var hdr [16]byte
	for {
		e, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ownPackScan{}, false
		}
		n, _ := f.ReadAt(hdr[:], int64(e.Offset))
		kind, size, ok := parseEntryHeader(hdr[:n])
		if !ok || kind < KindCommit || kind > KindTag {
			return ownPackScan{}, false // a delta, or not a pack entry
		}
		scan.entries = append(scan.entries, packLoc{path: packPath, off: int64(e.Offset), kind: kind, size: size, id: OID(e.Hash)})
	}
	return scan, true
}

// parseEntryHeader decodes a pack entry's type and inflated size.
func parseEntryHeader(b []byte) (Kind, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	kind := Kind(b[0] >> 4 & 7)
	size := int(b[0] & 0x0f)
	shift := 4
	for i := 0; b[i]&0x80 != 0; i++ {
		if i+1 >= len(b) || shift > 56 {
			return 0, 0, false
		}
		size |= int(b[i+1]&0x7f) << shift
		shift += 7
	}
	return kind, size, true
}

// gatherMerge reads every object of the packs to merge and, when asked,
// every loose object, deduplicated and sorted by id.
func (r *Repo) gatherMerge(ctx context.Context, plan Plan, own map[string]ownPackScan) ([]OID, []rawObject, []OID, error) {
	byID := map[OID]rawObject{}
	for _, p := range plan.MergePacks {
		scan, ok := own[p]
		if !ok {
			return nil, nil, nil, fmt.Errorf("merge %s: not an own pack", p)
		}
		for _, loc := range scan.entries {
			if err := ctx.Err(); err != nil {
				return nil, nil, nil, err
			}
			if _, dup := byID[loc.id]; dup {
				continue
			}
			obj, err := readPacked(loc)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, nil, errVanished
			}
			if err != nil {
				return nil, nil, nil, fmt.Errorf("merge %s: %w", p, err)
			}
			byID[loc.id] = obj
		}
	}
	var loose []OID
	if plan.PackLoose {
		objDir := filepath.Join(r.gitDir, "objects")
		for i := 0; i < 256; i++ {
			if err := ctx.Err(); err != nil {
				return nil, nil, nil, err
			}
			dir := fmt.Sprintf("%02x", i)
			files, err := os.ReadDir(filepath.Join(objDir, dir))
			if err != nil {
				continue
			}
			for _, f := range files {
				id, err := ParseOID(dir + f.Name())
				if err != nil {
					continue
				}
				b, err := os.ReadFile(filepath.Join(objDir, dir, f.Name()))
				if err != nil {
					continue // pruned meanwhile
				}
				obj, err := inflateLoose(b)
				if err != nil || HashObject(obj.kind, obj.data) != id {
					continue // corrupt: left for git fsck to report
				}
				byID[id] = obj
				loose = append(loose, id)
			}
		}
	}
	ids := make([]OID, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b OID) int { return bytes.Compare(a[:], b[:]) })
	objs := make([]rawObject, len(ids))
	for i, id := range ids {
		objs[i] = byID[id]
	}
	return ids, objs, loose, nil
}
