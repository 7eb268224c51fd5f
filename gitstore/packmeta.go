package gitstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// What housekeeping knows of each pack, kept between runs. A pack's
// content never changes under its name (the name is its checksum), so
// whether it is one of sessiond's, how many objects it holds, and
// whether every object of one pack is in another are facts to learn once
// per pack, not per run: a run reads the index and entries only of the
// packs it has not seen before and of those it merges, and costs the
// same however many objects the repository holds. Entries go with their
// packs when a listing no longer shows them, so the memory is bounded by
// the packs in the directory.

// packMeta is what is known of one pack.
type packMeta struct {
	own     bool // every object whole, as sessiond writes them
	objects int
	first   OID // the smallest id, for a quick "is it in that pack" test
	// heads are the first four bytes of each id in the pack, ascending,
	// read at the first lookup in an own pack: a lookup of an id the pack
	// lacks (every read of git's objects looks in every own pack first)
	// then costs no I/O but for one in 2^32/objects, for 4 bytes an object
	// where go-git would hold 28 in each storage.
	heads []uint32
}

// packMetas is the memory of packs, by base name.
type packMetas struct {
	mu  sync.Mutex // guards m and sub
	m   map[string]packMeta
	sub map[[2]string]bool // sub[{p, q}]: every object of p is in q
	gen atomic.Int64       // counts the packs forgotten
}

// generation counts the own packs forgotten so far.
func (c *packMetas) generation() int64 { return c.gen.Load() }

func (c *packMetas) get(name string) (packMeta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[name]
	return m, ok
}

// note records what is known of pack name (one this process wrote or
// classified).
func (c *packMetas) note(name string, m packMeta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]packMeta{}
	}
	c.m[name] = m
}

// isOwn reports whether pack name (a base name) is known to be sessiond's.
func (c *packMetas) isOwn(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name].own
}

// forget drops pack name, found gone or unreadable: the go-git storages
// see it again (as they see any pack not known to be own) once they list
// the directory anew.
func (c *packMetas) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[name].own {
		c.gen.Add(1)
	}
	delete(c.m, name)
}

// ownPack is an own pack as a lookup sees it.
type ownPack struct {
	name  string
	heads []uint32
}

func (c *packMetas) ownPacks() []ownPack {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ownPack, 0, len(c.m))
	for name, m := range c.m {
		if m.own {
			out = append(out, ownPack{name, m.heads})
		}
	}
	return out
}

func (c *packMetas) setHeads(name string, heads []uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.m[name]; ok {
		m.heads = heads
		c.m[name] = m
	}
}

// find looks id up in the own packs' index files, on disk: the go-git
// storages do not see own packs (objectFS hides them), so their decoded
// indexes, which grow with every object, are not held once per storage.
// It reports the object's place, or false.
func (c *packMetas) find(packDir string, id OID) (packLoc, bool) {
	for _, p := range c.ownPacks() {
		idx := filepath.Join(packDir, p.name+".idx")
		if p.heads == nil {
			t, err := readIdx(idx)
			if err != nil {
				c.forget(p.name) // gone, or go-git's to read (and report)
				continue
			}
			p.heads = make([]uint32, len(t.ids))
			for i, id := range t.ids {
				p.heads[i] = binary.BigEndian.Uint32(id[:4])
			}
			c.setHeads(p.name, p.heads)
		}
		if _, ok := slices.BinarySearch(p.heads, binary.BigEndian.Uint32(id[:4])); !ok {
			continue
		}
		off, ok, err := idxFind(idx, id)
		if err != nil {
			c.forget(p.name) // merged and deleted by another process, or damaged
		}
		if !ok {
			continue
		}
		return packLoc{id: id, path: filepath.Join(packDir, p.name+".pack"), off: off, kind: -1}, true
	}
	return packLoc{}, false
}

// withPrefix adds to found the ids in own packs that start with prefix
// (lower-case hex, at least two digits), reading of each index only the
// ids that start with the prefix's first byte.
func (c *packMetas) withPrefix(packDir, prefix string, found map[OID]bool) {
	var first [1]byte
	if len(prefix) < 2 {
		return
	}
	if _, err := hexDecode(first[:], prefix[:2]); err != nil {
		return
	}
	for _, p := range c.ownPacks() {
		ids, err := idxRun(filepath.Join(packDir, p.name+".idx"), first[0])
		if err != nil {
			c.forget(p.name) // gone (merged by another process) or damaged
		}
		for _, id := range ids {
			if strings.HasPrefix(id.String(), prefix) {
				found[id] = true
			}
		}
	}
}

// retain forgets the packs not in listed.
func (c *packMetas) retain(listed map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, m := range c.m {
		if !listed[name] {
			if m.own {
				c.gen.Add(1) // as forget: the storages may not know its cover
			}
			delete(c.m, name)
		}
	}
	for k := range c.sub {
		if !listed[k[0]] || !listed[k[1]] {
			delete(c.sub, k)
		}
	}
}

// subset reports whether every object of pack p is in pack q (base names
// in packDir), from memory or by reading both indexes. A read error
// reports false and is not remembered.
func (c *packMetas) subset(packDir, p, q string) bool {
	c.mu.Lock()
	v, ok := c.sub[[2]string{p, q}]
	pm := c.m[p]
	c.mu.Unlock()
	if ok {
		return v
	}
	if pm.objects == 0 {
		return false
	}
	qIdx := filepath.Join(packDir, q+".idx")
	_, v, err := idxFind(qIdx, pm.first) // usually false: one look into q's index
	if err != nil {
		return false
	}
	if v {
		a, err := readIdx(filepath.Join(packDir, p+".idx"))
		if err != nil {
			return false
		}
		b, err := readIdx(qIdx)
		if err != nil {
			return false
		}
		v = sortedSubset(a.ids, b.ids)
	}
	c.mu.Lock()
	if c.sub == nil {
		c.sub = map[[2]string]bool{}
	}
	c.sub[[2]string{p, q}] = v
	c.mu.Unlock()
	return v
}

// sortedSubset reports whether every id of a is in b, both ascending.
func sortedSubset(a, b []OID) bool {
	j := 0
	for _, id := range a {
		for j < len(b) && bytes.Compare(b[j][:], id[:]) < 0 {
			j++
		}
		if j == len(b) || b[j] != id {
			return false
		}
	}
	return true
}

// classifyPack reads a pack's index and the header of each entry, in
// file order through one buffered reader: the pack is sessiond's when
// every object is stored whole (git's packs carry deltas).
func classifyPack(packPath, idxPath string) (packMeta, error) {
	t, err := readIdx(idxPath)
	if err != nil {
		return packMeta{}, err
	}
	m := packMeta{own: true, objects: len(t.ids)}
	if len(t.ids) > 0 {
		m.first = t.ids[0]
	}
	f, err := os.Open(packPath)
	if err != nil {
		return packMeta{}, err
	}
	defer f.Close()
	offs := slices.Clone(t.offs)
	slices.Sort(offs)
	br := bufio.NewReaderSize(f, 64<<10)
	var pos int64
	for _, off := range offs {
		if off < pos {
			return packMeta{}, corruptPack(packPath, "entries overlap")
		}
		if _, err := br.Discard(int(off - pos)); err != nil {
			return packMeta{}, corruptPack(packPath, "entry past the end")
		}
		pos = off
		hdr, err := br.Peek(16)
		if err != nil && err != io.EOF {
			return packMeta{}, err
		}
		kind, _, ok := parseEntryHeader(hdr)
		if !ok || kind < KindCommit || kind > KindTag {
			m.own = false // a delta, or not a pack entry
			break
		}
	}
	return m, nil
}

func corruptPack(path, why string) error {
	return &os.PathError{Op: "read pack", Path: path, Err: errUnusablePack(why)}
}

// minOID is the smallest of ids (the zero id for none).
func minOID(ids []OID) OID {
	if len(ids) == 0 {
		return OID{}
	}
	m := ids[0]
	for _, id := range ids[1:] {
		if bytes.Compare(id[:], m[:]) < 0 {
			m = id
		}
	}
	return m
}
