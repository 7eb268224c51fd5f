package gitstore

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
)

// Pack and loose-object tolerance. go-git lists packs by their ".pack"
// file and fails every packed lookup (not only those of the broken pack)
// when one of them has no index, a truncated index, or an index for other
// content. git lists packs by their ".idx" and skips a pack it cannot use.
// objectFS is the filesystem the pooled go-git storages see: it hides from
// their pack listing every pack git would skip, and loose objects found
// corrupt, so one crash's debris never hides any other object.

// objectFS filters what go-git sees of the object directory.
type objectFS struct {
	billy.Filesystem
	packDir string // absolute objects/pack
	checks  *packChecks
	bad     *badLoose
	// own reports the packs (base names) known to be sessiond's: they are
	// hidden from go-git, which would hold every storage's decoded copy of
	// their growing indexes; Repo reads them through the index files on
	// disk (packMetas.find).
	own func(name string) bool
}

var packDirRel = filepath.Join("objects", "pack")

func (f objectFS) ReadDir(path string) ([]os.FileInfo, error) {
	infos, err := f.Filesystem.ReadDir(path)
	if err != nil || filepath.Clean(path) != packDirRel {
		return infos, err
	}
	dir := f.packDir
	idx := make(map[string]os.FileInfo, len(infos)/2)
	for _, fi := range infos {
		if n := fi.Name(); strings.HasSuffix(n, ".idx") {
			idx[strings.TrimSuffix(n, ".idx")] = fi
		}
	}
	out := infos[:0:0]
	listed := make(map[string]bool, len(infos))
	for _, fi := range infos {
		n := fi.Name()
		listed[n] = true
		base, ext, _ := strings.Cut(n, ".")
		if strings.HasPrefix(n, "pack-") && (ext == "pack" || ext == "idx") && f.own != nil && f.own(base) {
			continue
		}
		if strings.HasPrefix(n, "pack-") && ext == "pack" && !f.checks.usable(dir, fi, idx[base]) {
			continue
		}
		out = append(out, fi)
	}
	f.checks.retain(listed)
	return out, nil
}

func (f objectFS) Open(name string) (billy.File, error) {
	if f.bad.has(name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.Open(name)
}

func (f objectFS) Stat(name string) (os.FileInfo, error) {
	if f.bad.has(name) {
		return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.Stat(name)
}

// badLoose is the set of loose object files (relative to the git
// directory) found corrupt: go-git then looks for the object in the packs
// instead, as git does. Writing the object again clears it.
type badLoose struct {
	mu    sync.RWMutex // guards paths
	paths map[string]bool
}

func (b *badLoose) has(name string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.paths[filepath.Clean(name)]
}

func (b *badLoose) set(name string, bad bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bad {
		if b.paths == nil {
			b.paths = map[string]bool{}
		}
		b.paths[name] = true
	} else {
		delete(b.paths, name)
	}
}

func looseRel(id OID) string {
	s := id.String()
	return filepath.Join("objects", s[:2], s[2:])
}

// packChecks remembers which packs passed or failed checkPack, by name
// and the size and mtime of the pack and of its index, for the packs last
// listed (a pack's content never changes under its name, but a truncated
// copy may be replaced by a whole one, and a pack is renamed into place
// before its index: a pack found without one is skipped until it has one,
// never remembered as unusable).
type packChecks struct {
	mu   sync.Mutex // guards seen
	seen map[string]packCheck
}

type packCheck struct {
	size, idxSize int64
	mod, idxMod   time.Time
	ok            bool
}

// retain forgets the packs no longer listed, so that what it remembers
// is bounded by the packs in the directory, not by every pack it ever saw.
func (c *packChecks) retain(listed map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.seen {
		if !listed[name] {
			delete(c.seen, name)
		}
	}
}

// size is how many packs it remembers, for tests.
func (c *packChecks) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *packChecks) usable(dir string, fi, idx os.FileInfo) bool {
	if idx == nil {
		return false
	}
	key := fi.Name()
	want := packCheck{size: fi.Size(), mod: fi.ModTime(), idxSize: idx.Size(), idxMod: idx.ModTime()}
	c.mu.Lock()
	pc, ok := c.seen[key]
	c.mu.Unlock()
	if ok && pc.size == want.size && pc.mod.Equal(want.mod) && pc.idxSize == want.idxSize && pc.idxMod.Equal(want.idxMod) {
		return pc.ok
	}
	base := filepath.Join(dir, strings.TrimSuffix(key, ".pack"))
	want.ok = checkPack(base+".pack", base+".idx") == nil
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]packCheck{}
	}
	c.seen[key] = want
	c.mu.Unlock()
	return want.ok
}

// Sizes in a version 2 pack index: magic and version, the fan-out table,
// then per object its id, CRC and 4-byte offset, the 8-byte offsets of
// objects past 2 GiB, and the pack's and the index's checksums.
const (
	idxHeader   = 8
	idxFanout   = 256 * 4
	idxPerEntry = OIDSize + 4 + 4
	idxTrailer  = 2 * OIDSize
	packHeader  = 12
)

var idxMagic = []byte{0xff, 't', 'O', 'c'}

// errUnusablePack says why a pack is skipped.
type errUnusablePack string

func (e errUnusablePack) Error() string { return "unusable pack: " + string(e) }

// checkPack makes git's checks of a pack before it uses one (open_packed_git
// and check_packed_git_idx): an index of the right size for the objects it
// counts, a pack whose header counts the same objects and whose trailing
// checksum is the one the index records. go-git also needs the pack's name
// to be that checksum. Either file may be mid-rename or left by a crash.
func checkPack(packPath, idxPath string) error {
	idx, err := os.Open(idxPath)
	if err != nil {
		return errUnusablePack("no index")
	}
	defer idx.Close()
	ifi, err := idx.Stat()
	if err != nil {
		return err
	}
	var head [idxHeader + idxFanout]byte
	if _, err := io.ReadFull(idx, head[:]); err != nil {
		return errUnusablePack("index too small")
	}
	if !bytes.Equal(head[:4], idxMagic) || binary.BigEndian.Uint32(head[4:8]) != 2 {
		return errUnusablePack("index is not version 2")
	}
	n := int64(binary.BigEndian.Uint32(head[idxHeader+idxFanout-4:]))
	min := int64(idxHeader+idxFanout+idxTrailer) + n*idxPerEntry
	max := min
	if n > 0 {
		max += (n - 1) * 8
	}
	if ifi.Size() < min || ifi.Size() > max {
		return errUnusablePack("wrong index size")
	}
	var want [OIDSize]byte
	if _, err := idx.ReadAt(want[:], ifi.Size()-idxTrailer); err != nil {
		return errUnusablePack("index unreadable")
	}
	if name := filepath.Base(packPath); name != "pack-"+hex.EncodeToString(want[:])+".pack" {
		return errUnusablePack("name is not the pack's checksum")
	}
	pack, err := os.Open(packPath)
	if err != nil {
		return errUnusablePack("no pack")
	}
	defer pack.Close()
	pfi, err := pack.Stat()
	if err != nil {
		return err
	}
	if pfi.Size() < packHeader+OIDSize {
		return errUnusablePack("pack too small")
	}
	var ph [packHeader]byte
	if _, err := pack.ReadAt(ph[:], 0); err != nil {
		return errUnusablePack("pack unreadable")
	}
	if string(ph[:4]) != "PACK" || int64(binary.BigEndian.Uint32(ph[8:])) != n {
		return errUnusablePack("pack header does not match its index")
	}
	if v := binary.BigEndian.Uint32(ph[4:8]); v != 2 && v != 3 {
		return errUnusablePack("pack version")
	}
	var got [OIDSize]byte
	if _, err := pack.ReadAt(got[:], pfi.Size()-OIDSize); err != nil {
		return errUnusablePack("pack unreadable")
	}
	if got != want {
		return errUnusablePack("pack does not match its index (truncated?)")
	}
	return nil
}

// inflateLoose decodes a whole loose object file: zlib around
// "<kind> <size>\x00<content>", the content exactly size bytes.
func inflateLoose(b []byte) (rawObject, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return rawObject{}, err
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return rawObject{}, err
	}
	head, body, ok := bytes.Cut(data, []byte{0})
	if !ok {
		return rawObject{}, errors.New("no header")
	}
	kind, size, ok := strings.Cut(string(head), " ")
	n, err := strconv.Atoi(size)
	if !ok || err != nil || n != len(body) {
		return rawObject{}, errors.New("bad header")
	}
	for k := KindCommit; k <= KindTag; k++ {
		if k.String() == kind {
			return rawObject{kind: k, data: body}, nil
		}
	}
	return rawObject{}, errors.New("bad kind")
}
