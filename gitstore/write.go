package gitstore

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/internal/durable"
	"github.com/sessiond/sessiond/internal/failpoint"
)

// Batch collects new objects and writes them durably in one step. Objects
// added to a batch are not visible to readers until Flush returns; anything
// that points at them (a ref, a database row) must wait for Flush.
// A Batch is not safe for concurrent use.
type Batch struct {
	r    *Repo
	objs []rawObject
	ids  []OID
	seen map[OID]struct{}
	// built keeps the trees the batch's builder made, decoded, for the
	// tree cache once they are durable. They are queued without their
	// encoding, which Flush makes again only for a tree it writes.
	built map[OID]*Tree
	// scratch is where the builder encodes a tree to hash it.
	scratch []byte
}

// NewBatch starts an empty batch of object writes.
func (r *Repo) NewBatch() *Batch {
	return &Batch{r: r, seen: make(map[OID]struct{}), built: make(map[OID]*Tree)}
}

// Add queues an object of kind k and returns its id. Adding the same
// content twice queues it once.
func (b *Batch) Add(k Kind, data []byte) OID {
	id := HashObject(k, data)
	if _, dup := b.seen[id]; !dup {
		b.seen[id] = struct{}{}
		b.objs = append(b.objs, rawObject{kind: k, data: data})
		b.ids = append(b.ids, id)
	}
	return id
}

// addTree queues the tree of entries, which must be in git order with
// unique names and become the tree's cached decoded form.
func (b *Batch) addTree(entries []TreeEntry) OID {
	n := treeSize(entries)
	buf := append(b.scratch[:0], "tree "...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, 0)
	buf = appendTreeEntries(buf, entries)
	b.scratch = buf
	id := OID(sha1.Sum(buf))
	if _, dup := b.seen[id]; !dup {
		b.seen[id] = struct{}{}
		b.objs = append(b.objs, rawObject{kind: KindTree})
		b.ids = append(b.ids, id)
		b.built[id] = &Tree{OID: id, Entries: entries}
	}
	return id
}

// object returns queued object i, encoding a tree the builder queued.
func (b *Batch) object(i int) rawObject {
	obj := b.objs[i]
	if t := b.built[b.ids[i]]; t != nil && obj.kind == KindTree && obj.data == nil {
		obj.data = EncodeTree(t.Entries)
	}
	return obj
}

// Absorb queues o's objects in b as well (o keeps them), so that one
// Flush writes the objects of several batches: one pack, one fsync. Both
// must be batches of the same repository.
func (b *Batch) Absorb(o *Batch) error {
	if o.r != b.r {
		return fmt.Errorf("absorb a batch of %s into one of %s: not the same repository", o.r.gitDir, b.r.gitDir)
	}
	for i, id := range o.ids {
		if _, dup := b.seen[id]; dup {
			continue
		}
		b.seen[id] = struct{}{}
		b.objs = append(b.objs, o.objs[i])
		b.ids = append(b.ids, id)
		if t := o.built[id]; t != nil {
			b.built[id] = t
		}
	}
	return nil
}

// AddBlob queues a blob.
func (b *Batch) AddBlob(data []byte) OID { return b.Add(KindBlob, data) }

// Len is the number of distinct objects queued.
func (b *Batch) Len() int { return len(b.objs) }

// Flush writes every queued object durably: an object that already exists
// is only freshened (its file's mtime, as git does, so gc's grace period
// starts again); one new object is written loose, several go into one new
// pack. Files are fsynced and renamed into place, and their directory is
// fsynced, before Flush returns. The batch is empty afterwards.
func (b *Batch) Flush(ctx context.Context) error {
	if len(b.objs) == 0 {
		return nil
	}
	var fresh []int
	fr := freshener{now: time.Now(), touched: map[string]bool{}}
	for i, id := range b.ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		found, err := b.r.freshen(id, &fr)
		if err == nil && !found && len(b.r.alternates) > 0 {
			// An alternate's object is not copied (nor touched: the
			// alternate is only read).
			found, err = b.r.alternates.has(ctx, id)
		}
		if err != nil {
			return err
		}
		if !found {
			fresh = append(fresh, i)
		}
	}
	var err error
	switch len(fresh) {
	case 0:
	case 1:
		i := fresh[0]
		err = b.r.writer().writeLoose(b.ids[i], b.object(i))
	default:
		ids := make([]OID, len(fresh))
		objs := make([]rawObject, len(fresh))
		for j, i := range fresh {
			ids[j], objs[j] = b.ids[i], b.object(i)
		}
		_, err = b.r.writer().writePack(ids, objs)
	}
	if err != nil {
		return b.r.noSpace(SpaceObjects, err)
	}
	// What was just written is what is read next: the trees a session
	// builds its next mutation on, the blob it reads back. The caches are
	// bounded by count (see Options), which bounds what a thousand busy
	// sessions can pin.
	for i, id := range b.ids {
		switch obj := b.objs[i]; obj.kind {
		case KindTree:
			if t := b.built[id]; t != nil {
				b.r.trees.Add(id, t)
			} else if t, err := decodeTree(id, obj.data); err == nil {
				b.r.trees.Add(id, t)
			}
		case KindBlob:
			if len(obj.data) <= b.r.opts.BlobCacheMaxBytes {
				b.r.blobs.Add(id, obj.data)
			}
		}
	}
	if len(fresh) > 1 {
		b.r.hk.PackWritten(ctx)
	}
	b.objs, b.ids = b.objs[:0], b.ids[:0]
	clear(b.seen)
	clear(b.built)
	return nil
}

// WriteBlob stores one blob durably and returns its id.
func (r *Repo) WriteBlob(ctx context.Context, data []byte) (OID, error) {
	b := r.NewBatch()
	id := b.AddBlob(data)
	return id, b.Flush(ctx)
}

// loosePath is where the loose object id lives in gitDir.
func loosePath(gitDir string, id OID) string {
	s := id.String()
	return filepath.Join(gitDir, "objects", s[:2], s[2:])
}

// objectWriter writes new object files into a repository's object
// directory, loose or as a pack, and tells the repository's bookkeeping
// of them (its own packs, housekeeping's pack list, the corrupt loose
// objects).
type objectWriter struct {
	gitDir string
	packs  *ownPacks
	meta   *packMetas
	bad    *badLoose
}

// writer returns r's object writer.
func (r *Repo) writer() objectWriter {
	return objectWriter{gitDir: r.gitDir, packs: r.packs, meta: &r.meta, bad: &r.bad}
}

// freshener is the state of one flush's freshening: when, whether the
// pack indexes were re-read, and which packs were touched already.
type freshener struct {
	now       time.Time
	refreshed bool
	touched   map[string]bool // pack → whether it was there to touch
}

// touch bumps a pack's mtime once per flush. It reports false when the
// pack is gone (a consolidation or git gc replaced it): the object must
// then be looked for again, or written again.
func (f *freshener) touch(pack string) (bool, error) {
	if ok, seen := f.touched[pack]; seen {
		return ok, nil
	}
	err := os.Chtimes(pack, f.now, f.now)
	ok := err == nil
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	f.touched[pack] = ok
	return ok, err
}

// freshen reports whether object id exists, and if so bumps the mtime of
// the file that holds it (the loose object or its pack), as git's
// freshen_loose_object and freshen_packed_object do. It looks in this
// process's packs, then for a loose file, then in the pack indexes, which
// are re-read (only new ones) once per flush.
func (r *Repo) freshen(id OID, f *freshener) (bool, error) {
	if p := r.packs.packPath(id); p != "" {
		if ok, err := f.touch(p); ok || err != nil {
			return ok, err
		}
	}
	if !r.bad.has(looseRel(id)) {
		if err := os.Chtimes(loosePath(r.gitDir, id), f.now, f.now); err == nil {
			return true, nil
		}
	}
	if !f.refreshed {
		if err := r.locator.refresh(r.gitDir, r.packs, &r.checks); err != nil {
			return false, err
		}
		f.refreshed = true
	}
	for _, pack := range r.locator.lookup(id) {
		if ok, err := f.touch(pack); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// objectHeader is git's "<kind> <size>\x00" prefix of a loose object.
func objectHeader(k Kind, size int) []byte {
	h := append([]byte(k.String()), ' ')
	h = strconv.AppendInt(h, int64(size), 10)
	return append(h, 0)
}

func (r objectWriter) writeLoose(id OID, obj rawObject) error {
	var buf bytes.Buffer
	zw := deflater(zlib.BestSpeed, &buf)
	defer putDeflater(zlib.BestSpeed, zw)
	zw.Write(objectHeader(obj.kind, len(obj.data)))
	zw.Write(obj.data)
	if err := zw.Close(); err != nil {
		return err
	}
	path := loosePath(r.gitDir, id)
	if err := durable.MkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write object %s: %w", id, err)
	}
	if err := writeObjectFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("write object %s: %w", id, err)
	}
	r.bad.set(looseRel(id), false)
	return nil
}

// writeObjectFile writes a loose object as git does: a read-only
// tmp_obj_* file beside it, fsynced, renamed into place, the directory
// fsynced. A crash leaves at most the temporary file, which housekeeping
// removes once it is old.
func writeObjectFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := durable.WriteTemp(dir, "tmp_obj_", data, 0o444)
	if err != nil {
		return err
	}
	failpoint.Hit(failpoint.ObjectsWritten)
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := durable.SyncDir(dir); err != nil {
		return err
	}
	failpoint.Hit(failpoint.DirSynced)
	return nil
}

// writePack writes objects as one undeltified pack with its index and
// returns the pack's base name: the pack is built in memory, written and
// fsynced, then the index; both are renamed into place and the directory
// is fsynced once. The objects must be distinct.
func (r objectWriter) writePack(ids []OID, objs []rawObject) (string, error) {
	packDir := filepath.Join(r.gitDir, "objects", "pack")
	if err := durable.MkdirAll(packDir); err != nil {
		return "", err
	}
	size := 12 + OIDSize
	for _, obj := range objs {
		size += len(obj.data) + 32
	}
	var pack bytes.Buffer
	pack.Grow(size)
	pack.Write(packFileHeader(len(objs)))
	offsets := make([]int64, len(objs))
	crcs := make([]uint32, len(objs))
	// One compressor per level for the whole pack, from a pool: creating
	// a deflate writer (about a megabyte) costs far more than compressing
	// a small object.
	fast, stored := deflater(zlib.BestSpeed, nil), deflater(zlib.NoCompression, nil)
	defer putDeflater(zlib.BestSpeed, fast)
	defer putDeflater(zlib.NoCompression, stored)
	for i, obj := range objs {
		offsets[i] = int64(pack.Len())
		if err := writePackEntry(&pack, obj, fast, stored); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
		crcs[i] = crc32.ChecksumIEEE(pack.Bytes()[offsets[i]:])
	}
	packSum := sha1.Sum(pack.Bytes())
	pack.Write(packSum[:])
	var ib bytes.Buffer
	if err := writeIdx(&ib, ids, crcs, offsets, packSum); err != nil {
		return "", err
	}
	// The pack and its index are written and fsynced at once: two waits
	// for the disk would be one.
	var (
		idxTmp string
		idxErr error
		wg     sync.WaitGroup
	)
	wg.Go(func() { idxTmp, idxErr = durable.WriteTemp(packDir, "tmp_idx_", ib.Bytes(), 0o444) })
	packTmp, err := durable.WriteTemp(packDir, "tmp_pack_", pack.Bytes(), 0o444)
	wg.Wait()
	if idxErr == nil {
		defer os.Remove(idxTmp) // no-op once renamed
	}
	if err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	defer os.Remove(packTmp)
	if idxErr != nil {
		return "", fmt.Errorf("write pack index: %w", idxErr)
	}
	failpoint.Hit(failpoint.ObjectsWritten)
	name, err := installPack(packDir, packTmp, idxTmp, packSum, true)
	if err != nil {
		return "", err
	}
	locs := make([]packLoc, len(ids))
	for i, id := range ids {
		locs[i] = packLoc{id: id, path: filepath.Join(packDir, name+".pack"), off: offsets[i], kind: objs[i].kind, size: len(objs[i].data)}
	}
	r.packs.add(filepath.Join(packDir, name+".pack"), locs)
	r.meta.note(name, packMeta{own: true, objects: len(ids), first: minOID(ids)})
	return name, nil
}

// packFileHeader is a version 2 pack's header for n objects.
func packFileHeader(n int) []byte {
	hdr := make([]byte, packHeader)
	copy(hdr, "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(n))
	return hdr
}

// writePackEntry writes obj whole (undeltified) as a pack entry. Trees
// and commits are small and barely compress: they are stored (zlib level
// 0 is valid in a pack, and git gc recompresses); blobs go through fast.
func writePackEntry(w io.Writer, obj rawObject, fast, stored *zlib.Writer) error {
	if _, err := w.Write(packEntryHeader(obj.kind, len(obj.data))); err != nil {
		return err
	}
	zw := stored
	if obj.kind == KindBlob {
		zw = fast
	}
	zw.Reset(w)
	zw.Write(obj.data)
	return zw.Close()
}

// installPack puts a written pack in place under its checksum's name: the
// pack first, then its index, as git's finish_tmp_packfile does (git lists
// packs by their index and objectFS hides a pack without one from go-git,
// so either reader sees a complete pack or none), then the directory is
// synced. failpoints says whether the write path's failpoints apply (they
// do not to housekeeping's merges).
func installPack(packDir, packTmp, idxTmp string, sum [OIDSize]byte, failpoints bool) (string, error) {
	name := "pack-" + hex.EncodeToString(sum[:])
	base := filepath.Join(packDir, name)
	hit := func(p failpoint.Step) {
		if failpoints {
			failpoint.Hit(p)
		}
	}
	if err := os.Rename(packTmp, base+".pack"); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	hit(failpoint.PackRenamed)
	if err := os.Rename(idxTmp, base+".idx"); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	hit(failpoint.IndexRenamed)
	if err := durable.SyncDir(packDir); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	hit(failpoint.DirSynced)
	return name, nil
}

// packEntryHeader is the type-and-size varint that starts a pack entry.
func packEntryHeader(k Kind, size int) []byte {
	b := []byte{byte(k)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// ownPacks indexes the packs this process wrote, so their objects are
// readable at once without making every go-git storage re-read every pack
// index. The packs are undeltified, so reading one object is a seek and an
// inflate. No descriptor is kept open: a busy daemon writes thousands of
// small packs, and the tree and blob caches absorb most reads of recent
// objects. The index holds at most max objects: past it, the packs added
// first are forgotten, and a pack of more objects is not indexed (their
// objects are read through go-git), so its size does not follow every
// object the process ever wrote.
type ownPacks struct {
	mu    sync.RWMutex // guards index, packs and order
	index map[OID]packLoc
	packs map[string]int // pack path → entries of index in it, for every pack still indexed
	order []string       // the keys of packs, oldest first
	max   int
}

type packLoc struct {
	id   OID
	path string
	off  int64
	kind Kind
	size int
}

func newOwnPacks(max int) *ownPacks {
	return &ownPacks{index: make(map[OID]packLoc), packs: make(map[string]int), max: max}
}

func (p *ownPacks) add(path string, locs []packLoc) {
	if len(locs) > p.max {
		return // read through go-git as any other pack
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.packs[path]; !ok {
		p.packs[path] = 0
		p.order = append(p.order, path)
	}
	for _, loc := range locs {
		if prev, ok := p.index[loc.id]; ok {
			p.packs[prev.path]--
		}
		p.index[loc.id] = loc
		p.packs[path]++
	}
	if len(p.index) > p.max {
		p.shrink(path)
	}
}

// shrink forgets the oldest packs, never keep, until the index holds at
// most three quarters of max (so that it shrinks seldom, each time in one
// pass over the index). p.mu must be held.
func (p *ownPacks) shrink(keep string) {
	drop := map[string]bool{}
	n := len(p.index)
	for len(p.order) > 0 && n > p.max*3/4 && p.order[0] != keep {
		oldest := p.order[0]
		p.order = p.order[1:]
		n -= p.packs[oldest]
		drop[oldest] = true
		delete(p.packs, oldest)
	}
	for id, loc := range p.index {
		if drop[loc.path] {
			delete(p.index, id)
		}
	}
	p.order = slices.Clip(p.order) // let the dropped prefix go at the next append
}

// holds reports whether pack (its path) is one this process indexes.
func (p *ownPacks) holds(pack string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.packs[pack]
	return ok
}

// counts reports how many objects and packs it indexes, for tests.
func (p *ownPacks) counts() (objects, packs int) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.index), len(p.packs)
}

func (p *ownPacks) has(id OID) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.index[id]
	return ok
}

func (p *ownPacks) loc(id OID) (packLoc, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l, ok := p.index[id]
	return l, ok
}

func (p *ownPacks) packPath(id OID) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.index[id].path
}

// read reads id from the pack this process wrote it to. It reports false
// when the process wrote no such object, or when that pack is gone or
// unreadable (another process consolidated it): the caller then reads
// through go-git, which finds the pack that holds the object now.
func (p *ownPacks) read(id OID) (rawObject, bool) {
	for attempt := 0; attempt < 2; attempt++ {
		loc, ok := p.loc(id)
		if !ok {
			return rawObject{}, false
		}
		obj, err := readPacked(loc)
		if err == nil {
			return obj, true
		}
		// Consolidated under us: this process may have re-pointed the
		// index at the new pack meanwhile; else forget the pack.
		if loc2, _ := p.loc(id); loc2.path == loc.path {
			p.forget(loc.path)
		}
	}
	return rawObject{}, false
}

// forget drops a pack that is gone from the index.
func (p *ownPacks) forget(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.packs[path]; !ok {
		return
	}
	delete(p.packs, path)
	p.order = slices.DeleteFunc(p.order, func(q string) bool { return q == path })
	for id, loc := range p.index {
		if loc.path == path {
			delete(p.index, id)
		}
	}
}

// entryHeader reads the kind and size of the object at loc.
func entryHeader(loc packLoc) (Kind, int, error) {
	f, err := os.Open(loc.path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var hdr [16]byte
	n, _ := f.ReadAt(hdr[:], loc.off)
	kind, size, ok := parseEntryHeader(hdr[:n])
	if !ok {
		return 0, 0, fmt.Errorf("pack %s: no object at %d: %w", loc.path, loc.off, ErrCorrupt)
	}
	return kind, size, nil
}

// readPacked reads one undeltified object from a pack.
func readPacked(loc packLoc) (rawObject, error) {
	f, err := os.Open(loc.path)
	if err != nil {
		return rawObject{}, err
	}
	defer f.Close()
	// Skip the entry header: one byte plus one per continuation bit. A
	// place found in an index on disk (kind < 0) learns kind and size
	// from it.
	var hdr [16]byte
	n, _ := f.ReadAt(hdr[:], loc.off)
	i := 0
	for i < n && hdr[i]&0x80 != 0 {
		i++
	}
	if loc.kind < 0 {
		kind, size, ok := parseEntryHeader(hdr[:n])
		if !ok || kind < KindCommit || kind > KindTag {
			return rawObject{}, fmt.Errorf("pack %s: no whole object at %d: %w", loc.path, loc.off, ErrCorrupt)
		}
		loc.kind, loc.size = kind, size
	}
	zr, err := inflater(io.NewSectionReader(f, loc.off+int64(i)+1, 1<<62))
	if err != nil {
		return rawObject{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	data := make([]byte, loc.size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return rawObject{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	inflaters.Put(zr)
	return rawObject{kind: loc.kind, data: data}, nil
}

// deflaters are zlib writers to reuse, by level (BestSpeed and
// NoCompression, the two the writers use).
var deflaters [zlib.BestSpeed + 1]sync.Pool

// deflater returns a zlib writer of level writing to w.
func deflater(level int, w io.Writer) *zlib.Writer {
	if zw, ok := deflaters[level].Get().(*zlib.Writer); ok {
		zw.Reset(w)
		return zw
	}
	zw, _ := zlib.NewWriterLevel(w, level)
	return zw
}

// putDeflater gives zw back to the pool, without the buffer it wrote to.
func putDeflater(level int, zw *zlib.Writer) {
	zw.Reset(nil)
	deflaters[level].Put(zw)
}

// inflaters are zlib readers to reuse: each holds a 32 KiB window, and a
// consolidation reads every object of the packs it merges.
var inflaters sync.Pool

func inflater(r io.Reader) (io.ReadCloser, error) {
	if zr, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, err
		}
		return zr, nil
	}
	return zlib.NewReader(r)
}

// packLocator finds which pack holds an object, for freshening it. It
// knows the usable packs that own does not index (git's packs, other
// processes', the oldest of this one's) as last listed, and looks an
// object up in their index files on disk, as git does through mmap: it
// holds no index in memory, so it costs the same however many objects and
// packs the repository has. A pack this process indexes is looked up in
// own.
type packLocator struct {
	mu    sync.Mutex // guards packs
	packs []string   // pack paths
}

func (l *packLocator) refresh(gitDir string, own *ownPacks, checks *packChecks) error {
	packDir := filepath.Join(gitDir, "objects", "pack")
	names, err := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	if err != nil {
		return err
	}
	var packs []string
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		pack := strings.TrimSuffix(name, ".idx") + ".pack"
		listed[filepath.Base(pack)] = true
		if own.holds(pack) {
			continue
		}
		fi, err := os.Stat(pack)
		if err != nil {
			continue
		}
		ifi, err := os.Stat(name)
		if err != nil || !checks.usable(packDir, fi, ifi) {
			continue // removed since the listing, or skipped as git skips it
		}
		packs = append(packs, pack)
	}
	checks.retain(listed)
	l.mu.Lock()
	l.packs = packs
	l.mu.Unlock()
	return nil
}

// size is how many packs it knows, for tests.
func (l *packLocator) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.packs)
}

// lookup returns every pack whose index holds id.
func (l *packLocator) lookup(id OID) []string {
	l.mu.Lock()
	packs := slices.Clone(l.packs)
	l.mu.Unlock()
	var out []string
	for _, pack := range packs {
		if idxHolds(strings.TrimSuffix(pack, ".pack")+".idx", id) {
			out = append(out, pack)
		}
	}
	return out
}

// idxHolds reports whether the version 2 pack index at path lists id.
// An index that cannot be read holds nothing.
func idxHolds(path string, id OID) bool {
	_, ok, _ := idxFind(path, id)
	return ok
}

// idxRun returns the ids in the version 2 pack index at path that start
// with byte b.
func idxRun(path string, b byte) ([]OID, error) {
	fan, err := readFan(path)
	if err != nil {
		return nil, err
	}
	lo, hi := uint32(0), fan[b]
	if b > 0 {
		lo = fan[b-1]
	}
	if hi <= lo {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := idxFits(f, int64(fan[255])); err != nil {
		return nil, err
	}
	run := make([]byte, int(hi-lo)*OIDSize)
	if _, err := f.ReadAt(run, idxHeader+idxFanout+int64(lo)*OIDSize); err != nil {
		return nil, err
	}
	ids := make([]OID, hi-lo)
	for i := range ids {
		copy(ids[i][:], run[i*OIDSize:])
	}
	return ids, nil
}

// idxFits checks that the index file f is large enough for count objects.
func idxFits(f *os.File, count int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < idxHeader+idxFanout+idxTrailer+count*idxPerEntry {
		return ErrCorrupt
	}
	return nil
}

// readFan reads the fan-out table of the version 2 index at path.
func readFan(path string) (*[256]uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b [idxFanout]byte
	if _, err := f.ReadAt(b[:], idxHeader); err != nil {
		return nil, err
	}
	var fan [256]uint32
	for i := range fan {
		fan[i] = binary.BigEndian.Uint32(b[4*i:])
		if i > 0 && fan[i] < fan[i-1] {
			return nil, fmt.Errorf("pack index %s: fan-out table not monotonic: %w", path, ErrCorrupt)
		}
	}
	return &fan, nil
}

// idxFind looks id up in the version 2 pack index at path and returns its
// offset in the pack: the fan-out table bounds the run of ids that start
// with id's first byte, which is read in one piece and searched. An index
// that cannot be read holds nothing (the error says why).
func idxFind(path string, id OID) (int64, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var lo, hi uint32
	var b [8]byte
	if id[0] > 0 {
		if _, err := f.ReadAt(b[:], idxHeader+4*int64(id[0]-1)); err != nil {
			return 0, false, err
		}
		lo = binary.BigEndian.Uint32(b[:4])
	} else if _, err := f.ReadAt(b[4:], idxHeader); err != nil {
		return 0, false, err
	}
	hi = binary.BigEndian.Uint32(b[4:])
	if hi <= lo {
		return 0, false, nil
	}
	// The run must lie within the table the last fan-out entry counts
	// (a damaged table could ask for any size).
	var total [4]byte
	if _, err := f.ReadAt(total[:], idxHeader+idxFanout-4); err != nil {
		return 0, false, err
	}
	count := int64(binary.BigEndian.Uint32(total[:]))
	if err := idxFits(f, count); err != nil || int64(hi) > count {
		return 0, false, fmt.Errorf("pack index %s: fan-out past its object count or its size: %w", path, ErrCorrupt)
	}
	run := make([]byte, int(hi-lo)*OIDSize)
	if _, err := f.ReadAt(run, idxHeader+idxFanout+int64(lo)*OIDSize); err != nil {
		return 0, false, err
	}
	n := int(hi - lo)
	i := sort.Search(n, func(k int) bool { return bytes.Compare(run[k*OIDSize:(k+1)*OIDSize], id[:]) >= 0 })
	if i >= n || !bytes.Equal(run[i*OIDSize:(i+1)*OIDSize], id[:]) {
		return 0, false, nil
	}
	// The offset table follows the ids and their CRCs; an offset with its
	// top bit set indexes the table of 8-byte offsets after it.
	k := int64(lo) + int64(i)
	var o [8]byte
	if _, err := f.ReadAt(o[:4], idxHeader+idxFanout+count*(OIDSize+4)+4*k); err != nil {
		return 0, false, err
	}
	off := binary.BigEndian.Uint32(o[:4])
	if off&0x80000000 == 0 {
		return int64(off), true, nil
	}
	if _, err := f.ReadAt(o[:], idxHeader+idxFanout+count*(OIDSize+8)+8*int64(off&0x7fffffff)); err != nil {
		return 0, false, err
	}
	return int64(binary.BigEndian.Uint64(o[:])), true, nil
}

func (p *ownPacks) withPrefix(prefix string) []OID {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []OID
	for id := range p.index {
		if strings.HasPrefix(id.String(), prefix) {
			out = append(out, id)
		}
	}
	return out
}
