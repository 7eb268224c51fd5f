package gitstore

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/durable"
)

// objectDir is the object directory as package housekeeping drives it
// (housekeeping.Repository): it lists what the directory holds, carries a
// plan out with the repository's pack writer, and deletes at close what
// its runs superseded. It is built over the Repo (embedded) whose files
// it changes; its methods run under the housekeeping Manager's one-run
// lock, which guards retired.
type objectDir struct {
	*Repo
	// retired: the packs (base names) this Repo merged into a newer pack;
	// any run deletes them once superseded long enough (the directory
	// tells), and AtClose at once.
	retired map[string]bool
}

var _ housekeeping.Repository = (*objectDir)(nil)

// Housekeep runs housekeeping once (see package housekeeping): it removes
// old debris, deletes superseded packs whose wait is over, merges own
// packs and packs loose objects into one new pack. One run at a time per
// Repo; a call that finds a run in progress waits for it and then runs,
// so its run sees every object written before the call. A failure is
// logged and counted.
//
// It never loses an object: a pack or loose file is deleted only after a
// pack holding every object it held is durable (written, fsynced, renamed
// into place, its directory fsynced). A file that vanishes while it is
// read (another process or git gc got there first) aborts the merge
// without deleting anything.
func (r *Repo) Housekeep(ctx context.Context) (housekeeping.Report, error) {
	return r.hk.RunAfter(ctx)
}

// State lists the object directory (housekeeping.Repository).
func (r *objectDir) State(ctx context.Context) (housekeeping.State, error) {
	st, learnt, err := r.repoState(ctx)
	if err != nil {
		return st, fmt.Errorf("housekeep: %w", err)
	}
	if learnt {
		// Packs just found to be own (a restart, another process's) are
		// hidden from storages made from now on; let these go too.
		r.pool.refreshStorages(ctx, true)
	}
	return st, nil
}

// Execute carries plan out (housekeeping.Repository).
func (r *objectDir) Execute(ctx context.Context, plan housekeeping.Plan, st housekeeping.State) (housekeeping.Report, error) {
	rep := housekeeping.Report{PacksBefore: len(st.Packs)}
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
	name, loose, err := r.mergePacks(ctx, plan)
	if err != nil || name == "" {
		if errors.Is(err, errVanished) {
			err = nil // someone else is consolidating: next time
		}
		if err != nil {
			err = fmt.Errorf("housekeep: %w", err)
		}
		return rep, err
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
		if err := os.Remove(loosePath(r.gitDir, id)); err == nil {
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
// list again when that happens.
func (r *objectDir) deletePacks(names []string) (int, error) {
	packDir := filepath.Join(r.gitDir, "objects", "pack")
	if err := durable.SyncDir(packDir); err != nil {
		return 0, err
	}
	n := 0
	r.pool.swapStorages(context.Background(), true, func() {
		for _, name := range names {
			base := filepath.Join(packDir, name)
			// The index first, as git's repack does: a reader lists packs
			// by their index (git) or sees only packs with one (objectFS).
			err := os.Remove(base + ".idx")
			for _, ext := range []string{".rev", ".pack"} {
				_ = os.Remove(base + ext)
			}
			r.packs.forget(base + ".pack")
			r.meta.forget(name)
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

// AtClose deletes the packs this Repo merged that are still covered (a
// graceful stop leaves none of its own waiting).
func (r *objectDir) AtClose() {
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
func (r *objectDir) gitGCRunning(now time.Time) bool {
	fi, err := os.Stat(filepath.Join(r.gitDir, "gc.pid"))
	return err == nil && now.Sub(fi.ModTime()) < 12*time.Hour
}

var errVanished = errors.New("file vanished during housekeeping")

// repoState lists the object directory: packs (telling own packs from
// git's, from memory or by reading a new pack's entries once), loose
// objects and debris. It reports whether it learnt of an own pack it did
// not know.
func (r *objectDir) repoState(ctx context.Context) (housekeeping.State, bool, error) {
	objDir := filepath.Join(r.gitDir, "objects")
	packDir := filepath.Join(objDir, "pack")
	st := housekeeping.State{Now: time.Now()}
	entries, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, false, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	listed := map[string]bool{}
	learnt := false
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return st, false, err
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
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			ii, err := e.Info()
			if err != nil {
				continue
			}
			if !r.checks.usable(packDir, fi, ii) {
				continue // skipped by readers; not ours to delete
			}
			listed[base] = true
			pi := housekeeping.PackInfo{Name: base, Size: fi.Size(), Made: ii.ModTime()}
			special := names[base+".keep"] || names[base+".promisor"] || names[base+".bitmap"] || names[base+".mtimes"]
			if !special {
				m, ok := r.meta.get(base)
				if !ok {
					if m, err = classifyPack(path, filepath.Join(packDir, n)); err != nil {
						continue
					}
					r.meta.note(base, m)
					learnt = learnt || m.own
				}
				if m.own {
					pi.Own = true
					pi.Objects = m.objects
				}
			}
			st.Packs = append(st.Packs, pi)
		}
	}
	r.meta.retain(listed)
	housekeeping.MarkCovered(st.Packs, func(p, q string) bool { return r.meta.subset(packDir, p, q) })
	// Loose objects and their temporary files, and git's older layout's
	// temporary files directly under objects/.
	top, err := os.ReadDir(objDir)
	if err != nil {
		return st, false, err
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
	return st, learnt, nil
}

// isTempName: git's temporary object, pack and index files, and the
// temporary files durable.WriteFile makes.
func isTempName(n string) bool {
	return strings.HasPrefix(n, "tmp_") || strings.HasPrefix(n, ".tmp-")
}

func appendDebris(ds []housekeeping.Debris, rel string, e fs.DirEntry) []housekeeping.Debris {
	fi, err := e.Info()
	if err != nil {
		return ds
	}
	return append(ds, housekeeping.Debris{Path: rel, ModTime: fi.ModTime()})
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

// mergeEntry is one object of a merge: an entry of a source pack to copy
// as it is, or a loose object's entry built in memory.
type mergeEntry struct {
	id    OID
	src   int   // index into the source packs; -1 for a loose object
	off   int64 // where the entry starts in its source pack
	n     int64 // its length in bytes
	crc   uint32
	entry []byte // a loose object's pack entry
}

// mergePacks writes one pack holding every object of plan.MergePacks and,
// when plan.PackLoose, every loose object, sorted by id (so two runs
// merging the same set write the same pack), and returns its name and the
// loose objects it holds ("" and none when there was nothing to merge).
// Entries of the packs are copied as they are, each checked against the
// CRC-32 its index records, as git repack reuses them: nothing is
// inflated, and memory holds one entry and the index of the new pack,
// never the objects.
func (r *objectDir) mergePacks(ctx context.Context, plan housekeeping.Plan) (string, []OID, error) {
	packDir := filepath.Join(r.gitDir, "objects", "pack")
	var entries []mergeEntry
	var srcs []*os.File
	defer func() {
		for _, f := range srcs {
			f.Close()
		}
	}()
	for _, p := range plan.MergePacks {
		base := filepath.Join(packDir, p)
		f, err := os.Open(base + ".pack")
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, errVanished
		}
		if err != nil {
			return "", nil, fmt.Errorf("merge %s: %w", p, err)
		}
		srcs = append(srcs, f)
		fi, err := f.Stat()
		if err != nil {
			return "", nil, fmt.Errorf("merge %s: %w", p, err)
		}
		t, err := readIdx(base + ".idx")
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, errVanished
		}
		if err != nil {
			return "", nil, fmt.Errorf("merge %s: %w", p, err)
		}
		// An entry ends where the next one (in the file) starts, the last
		// where the pack's checksum does.
		order := make([]int, len(t.ids))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return int(t.offs[a] - t.offs[b]) })
		for k, i := range order {
			end := fi.Size() - OIDSize
			if k+1 < len(order) {
				end = t.offs[order[k+1]]
			}
			if end <= t.offs[i] || t.offs[i] < packHeader {
				return "", nil, fmt.Errorf("merge %s: entry of %s out of place: %w", p, t.ids[i], ErrCorrupt)
			}
			entries = append(entries, mergeEntry{id: t.ids[i], src: len(srcs) - 1, off: t.offs[i], n: end - t.offs[i], crc: t.crcs[i]})
		}
	}
	var loose []OID
	if plan.PackLoose {
		var err error
		if entries, loose, err = r.looseEntries(ctx, entries); err != nil {
			return "", nil, err
		}
	}
	// By id, the first source (in name order, loose objects last) first;
	// then one entry per object.
	slices.SortFunc(entries, func(a, b mergeEntry) int {
		if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
			return c
		}
		return cmpSrc(a.src, b.src)
	})
	entries = slices.CompactFunc(entries, func(a, b mergeEntry) bool { return a.id == b.id })
	if len(entries) == 0 {
		return "", nil, nil
	}
	ids := make([]OID, len(entries))
	crcs := make([]uint32, len(entries))
	offs := make([]int64, len(entries))
	indexed := len(entries) <= r.opts.OwnIndexSize
	var locs []packLoc
	if indexed {
		locs = make([]packLoc, len(entries))
	}
	var sum [OIDSize]byte
	packTmp, err := durable.WriteTempFunc(packDir, "tmp_pack_", 0o444, func(w io.Writer) error {
		h := sha1.New()
		hw := io.MultiWriter(w, h)
		pos := int64(packHeader)
		hw.Write(packFileHeader(len(entries)))
		var buf []byte
		for i, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			b := e.entry
			if e.src >= 0 {
				buf = slices.Grow(buf[:0], int(e.n))[:e.n]
				if _, err := srcs[e.src].ReadAt(buf, e.off); err != nil {
					return fmt.Errorf("merge %s: read %s: %w", plan.MergePacks[e.src], e.id, err)
				}
				if crc32.ChecksumIEEE(buf) != e.crc {
					return fmt.Errorf("merge %s: entry of %s fails its CRC: %w", plan.MergePacks[e.src], e.id, ErrCorrupt)
				}
				b = buf
			}
			ids[i], offs[i], crcs[i] = e.id, pos, crc32.ChecksumIEEE(b)
			if indexed {
				kind, size, _ := parseEntryHeader(b[:min(len(b), 16)])
				locs[i] = packLoc{id: e.id, off: pos, kind: kind, size: size}
			}
			if _, err := hw.Write(b); err != nil {
				return err
			}
			pos += int64(len(b))
		}
		copy(sum[:], h.Sum(nil))
		_, err := w.Write(sum[:])
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("merge: %w", err)
	}
	defer os.Remove(packTmp) // no-op once renamed
	idxTmp, err := durable.WriteTempFunc(packDir, "tmp_idx_", 0o444, func(w io.Writer) error {
		return writeIdx(w, ids, crcs, offs, sum)
	})
	if err != nil {
		return "", nil, fmt.Errorf("merge: write pack index: %w", err)
	}
	defer os.Remove(idxTmp)
	name, err := installPack(packDir, packTmp, idxTmp, sum, false)
	if err != nil {
		return "", nil, err
	}
	if indexed {
		path := filepath.Join(packDir, name+".pack")
		for i := range locs {
			locs[i].path = path
		}
		r.packs.add(path, locs)
	}
	r.meta.note(name, packMeta{own: true, objects: len(ids), first: ids[0]})
	return name, loose, nil
}

// cmpSrc orders sources: packs by index, loose objects (-1) last.
func cmpSrc(a, b int) int {
	if a < 0 {
		a = math.MaxInt
	}
	if b < 0 {
		b = math.MaxInt
	}
	return a - b
}

// looseEntries appends to entries every loose object that inflates to its
// id, as a pack entry built in memory, and returns their ids too.
func (r *objectDir) looseEntries(ctx context.Context, entries []mergeEntry) ([]mergeEntry, []OID, error) {
	objDir := filepath.Join(r.gitDir, "objects")
	fast, stored := deflater(zlib.BestSpeed, nil), deflater(zlib.NoCompression, nil)
	defer putDeflater(zlib.BestSpeed, fast)
	defer putDeflater(zlib.NoCompression, stored)
	var loose []OID
	for i := 0; i < 256; i++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
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
			var e bytes.Buffer
			if err := writePackEntry(&e, obj, fast, stored); err != nil {
				return nil, nil, err
			}
			entries = append(entries, mergeEntry{id: id, src: -1, entry: e.Bytes()})
			loose = append(loose, id)
		}
	}
	return entries, loose, nil
}
