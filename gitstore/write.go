package gitstore

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"

	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

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
			found, err = b.r.inAlternates(ctx, id)
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
		err = b.r.writeLoose(b.ids[i], b.object(i))
	default:
		ids := make([]OID, len(fresh))
		objs := make([]rawObject, len(fresh))
		for j, i := range fresh {
			ids[j], objs[j] = b.ids[i], b.object(i)
		}
		_, err = b.r.writePack(ids, objs)
	}
	if err != nil {
		return err
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
		b.r.packWritten()
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

func (r *Repo) loosePath(id OID) string {
	s := id.String()
	return filepath.Join(r.gitDir, "objects", s[:2], s[2:])
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
		if err := os.Chtimes(r.loosePath(id), f.now, f.now); err == nil {
			return true, nil
		}
	}
	if !f.refreshed {
		if err := r.locator.refresh(r.gitDir); err != nil {
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

func (r *Repo) writeLoose(id OID, obj rawObject) error {
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
	zw.Write(objectHeader(obj.kind, len(obj.data)))
	zw.Write(obj.data)
	if err := zw.Close(); err != nil {
		return err
	}
	path := r.loosePath(id)
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
// is fsynced once.
func (r *Repo) writePack(ids []OID, objs []rawObject) (string, error) {
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
	hdr := make([]byte, 12)
	copy(hdr, "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	pack.Write(hdr)
	idx := new(idxfile.Writer)
	if err := idx.OnHeader(uint32(len(objs))); err != nil {
		return "", err
	}
	offsets := make([]int64, len(objs))
	// One compressor per level for the whole pack: creating a deflate
	// writer costs far more than compressing a small object.
	fast, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	stored, _ := zlib.NewWriterLevel(nil, zlib.NoCompression)
	for i, obj := range objs {
		offsets[i] = int64(pack.Len())
		pack.Write(packEntryHeader(obj.kind, len(obj.data)))
		// Trees and commits are small and barely compress: store them
		// (zlib level 0 is valid in a pack, and git gc recompresses).
		zw := stored
		if obj.kind == KindBlob {
			zw = fast
		}
		zw.Reset(&pack)
		zw.Write(obj.data)
		if err := zw.Close(); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
		crc := crc32.ChecksumIEEE(pack.Bytes()[offsets[i]:])
		if err := idx.OnInflatedObjectContent(plumbing.Hash(ids[i]), offsets[i], crc, nil); err != nil {
			return "", err
		}
	}
	packSum := plumbing.Hash(sha1.Sum(pack.Bytes()))
	pack.Write(packSum[:])
	if err := idx.OnFooter(packSum); err != nil {
		return "", err
	}
	mi, err := idx.Index()
	if err != nil {
		return "", err
	}
	var ib bytes.Buffer
	if _, err := idxfile.NewEncoder(&ib).Encode(mi); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	packTmp, err := durable.WriteTemp(packDir, "tmp_pack_", pack.Bytes(), 0o444)
	if err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	defer os.Remove(packTmp) // no-op once renamed
	idxTmp, err := durable.WriteTemp(packDir, "tmp_idx_", ib.Bytes(), 0o444)
	if err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	defer os.Remove(idxTmp)
	failpoint.Hit(failpoint.ObjectsWritten)
	name := "pack-" + packSum.String()
	base := filepath.Join(packDir, name)
	// The pack goes first, then its index, as git's finish_tmp_packfile
	// does: git lists packs by their index and objectFS hides a pack
	// without one from go-git, so either reader sees a complete pack or
	// none.
	if err := os.Rename(packTmp, base+".pack"); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	failpoint.Hit(failpoint.PackRenamed)
	if err := os.Rename(idxTmp, base+".idx"); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	failpoint.Hit(failpoint.IndexRenamed)
	if err := durable.SyncDir(packDir); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	failpoint.Hit(failpoint.DirSynced)
	r.packs.add(base+".pack", int64(pack.Len()), ids, offsets, objs)
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
// objects.
type ownPacks struct {
	mu    sync.RWMutex // guards index and sizes
	index map[OID]packLoc
	sizes map[string]int64 // pack path → bytes, for every pack still indexed
}

type packLoc struct {
	id   OID
	path string
	off  int64
	kind Kind
	size int
}

func newOwnPacks() *ownPacks {
	return &ownPacks{index: make(map[OID]packLoc), sizes: make(map[string]int64)}
}

func (p *ownPacks) add(path string, size int64, ids []OID, offsets []int64, objs []rawObject) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes[path] = size
	for i, id := range ids {
		p.index[id] = packLoc{id: id, path: path, off: offsets[i], kind: objs[i].kind, size: len(objs[i].data)}
	}
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
	delete(p.sizes, path)
	for id, loc := range p.index {
		if loc.path == path {
			delete(p.index, id)
		}
	}
}

// readPacked reads one undeltified object from a pack.
func readPacked(loc packLoc) (rawObject, error) {
	f, err := os.Open(loc.path)
	if err != nil {
		return rawObject{}, err
	}
	defer f.Close()
	// Skip the entry header: one byte plus one per continuation bit.
	var hdr [16]byte
	n, _ := f.ReadAt(hdr[:], loc.off)
	i := 0
	for i < n && hdr[i]&0x80 != 0 {
		i++
	}
	zr, err := zlib.NewReader(io.NewSectionReader(f, loc.off+int64(i)+1, 1<<62))
	if err != nil {
		return rawObject{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	defer zr.Close()
	data := make([]byte, loc.size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return rawObject{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return rawObject{kind: loc.kind, data: data}, nil
}

// packLocator finds which pack holds an object, for freshening it. It
// keeps every pack's index in memory and, on refresh, loads the indexes of
// packs that appeared and forgets those that went.
type packLocator struct {
	mu      sync.Mutex                      // guards indexes
	indexes map[string]*idxfile.MemoryIndex // pack path → index
}

func (l *packLocator) refresh(gitDir string) error {
	packDir := filepath.Join(gitDir, "objects", "pack")
	names, err := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.indexes == nil {
		l.indexes = make(map[string]*idxfile.MemoryIndex)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		pack := strings.TrimSuffix(name, ".idx") + ".pack"
		seen[pack] = true
		if _, ok := l.indexes[pack]; ok {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue // removed since the listing
		}
		mi := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(mi)
		f.Close()
		if err == nil {
			l.indexes[pack] = mi
		}
	}
	for pack := range l.indexes {
		if !seen[pack] {
			delete(l.indexes, pack)
		}
	}
	return nil
}

// lookup returns every pack whose index holds id.
func (l *packLocator) lookup(id OID) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var packs []string
	for pack, mi := range l.indexes {
		if ok, _ := mi.Contains(plumbing.Hash(id)); ok {
			packs = append(packs, pack)
		}
	}
	return packs
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
