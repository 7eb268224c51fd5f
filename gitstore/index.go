package gitstore

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Index is a work tree's git index file (the dircache) as read: its
// version and its entries in git's order. Only what the entries say is
// kept, and the untracked cache as it is: written again, it has no other
// extensions (the cache tree, fsmonitor data, resolve-undo) than those
// set below, which git rebuilds as it needs them. An index with an extension that changes what the
// entries mean (a split index's "link", a sparse index's "sdir") does
// not read (ErrIndexFormat). The format is git's
// (Documentation/gitformat-index.txt), versions 2 to 4.
type Index struct {
	Version uint32
	Entries []IndexEntry
	// Tree, when set, is written as git's cache-tree extension (TREE):
	// the tree ids of the directories whose entries are all in the index
	// as that tree has them, so git compares the index with HEAD without
	// walking those trees.
	Tree *CacheTree
	// FSMonitorToken, when set, makes Encode write git's fsmonitor
	// extension (version 2) with that token and every entry valid: git
	// then stats only the paths its fsmonitor hook names.
	FSMonitorToken string
	// Untracked is git's untracked cache extension (UNTR) as read, its
	// bytes kept as they are and written back as they are: the
	// directories git last read and what they held that the index does
	// not. It is only valid beside entries that say the same of the work
	// tree (git checks its identity, the location and system it was
	// built for, and drops it otherwise).
	Untracked []byte
	// ModTime is the file's modification time when read (zero: no file):
	// an entry whose file changed in that same instant is racy, as git
	// calls it, and its content has to be compared.
	ModTime time.Time
}

// CacheTree is one directory of the cache-tree extension: its name (the
// last component; "" at the root), how many index entries are below it
// (-1: unknown, then OID is not written) and its tree id.
type CacheTree struct {
	Name     string
	Entries  int
	OID      OID
	Subtrees []*CacheTree
}

// IndexEntry is one entry of an Index.
type IndexEntry struct {
	Path  string
	Mode  Mode
	OID   OID
	Stage int // 0, or 1 to 3 for the sides of a conflict
	Stat  IndexStat
	// AssumeValid is git update-index --assume-unchanged; SkipWorktree
	// marks a path a sparse checkout leaves out of the work tree,
	// IntentToAdd one git add -N recorded without content.
	AssumeValid, SkipWorktree, IntentToAdd bool
}

// IndexStat is what git remembers of a file's stat data to tell whether
// it changed without reading it (32 bits each, as git keeps them).
type IndexStat struct {
	CTime, MTime             time.Time
	Dev, Ino, UID, GID, Size uint32
}

// ErrIndexFormat: an index file sessiond cannot read or could not write
// back as it is.
var ErrIndexFormat = errors.New("unsupported index format")

// The flags of an index entry.
const (
	flagAssumeValid  = 0x8000
	flagExtended     = 0x4000
	flagStageShift   = 12
	flagNameMask     = 0x0fff
	flagSkipWorktree = 0x4000 // in the extended flags
	flagIntentToAdd  = 0x2000
)

// ReadIndex reads the index file at path; a missing file is an empty
// index. Its trailing checksum is verified.
func ReadIndex(path string) (*Index, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Index{Version: 2}, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ix.ModTime = fi.ModTime()
	return ix, nil
}

func decodeIndex(data []byte) (*Index, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrIndexFormat, fmt.Sprintf(format, args...))
	}
	if len(data) < 12+sha1.Size || string(data[:4]) != "DIRC" {
		return nil, bad("not an index file")
	}
	body := data[:len(data)-sha1.Size]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], data[len(body):]) {
		return nil, bad("checksum mismatch")
	}
	ix := &Index{Version: binary.BigEndian.Uint32(body[4:])}
	if ix.Version < 2 || ix.Version > 4 {
		return nil, bad("version %d (2 to 4 are known)", ix.Version)
	}
	n := binary.BigEndian.Uint32(body[8:])
	if uint64(n) > uint64(len(body))/62 {
		return nil, bad("%d entries in %d bytes", n, len(body))
	}
	ix.Entries = make([]IndexEntry, n)
	off := 12
	var prev []byte
	for i := range ix.Entries {
		if off+62 > len(body) {
			return nil, bad("entry %d truncated", i)
		}
		b := body[off:]
		u32 := func(k int) uint32 { return binary.BigEndian.Uint32(b[4*k:]) }
		e := &ix.Entries[i]
		e.Stat = IndexStat{CTime: indexTime(u32(0), u32(1)), MTime: indexTime(u32(2), u32(3)),
			Dev: u32(4), Ino: u32(5), UID: u32(7), GID: u32(8), Size: u32(9)}
		e.Mode = Mode(u32(6))
		copy(e.OID[:], b[40:60])
		flags := binary.BigEndian.Uint16(b[60:])
		e.AssumeValid = flags&flagAssumeValid != 0
		e.Stage = int(flags>>flagStageShift) & 3
		head := 62
		if flags&flagExtended != 0 {
			if ix.Version < 3 || off+64 > len(body) {
				return nil, bad("entry %d: extended flags in version %d", i, ix.Version)
			}
			ext := binary.BigEndian.Uint16(b[62:])
			e.SkipWorktree, e.IntentToAdd = ext&flagSkipWorktree != 0, ext&flagIntentToAdd != 0
			head = 64
		}
		rest := b[head:]
		if ix.Version == 4 {
			strip, used := decodeVarint(rest)
			if used == 0 || strip > uint64(len(prev)) {
				return nil, bad("entry %d: bad name prefix", i)
			}
			end := bytes.IndexByte(rest[used:], 0)
			if end < 0 {
				return nil, bad("entry %d: unterminated name", i)
			}
			name := append(append([]byte{}, prev[:len(prev)-int(strip)]...), rest[used:used+end]...)
			e.Path, prev = string(name), name
			off += head + used + end + 1
			continue
		}
		nameLen := int(flags & flagNameMask)
		if nameLen == flagNameMask {
			nameLen = bytes.IndexByte(rest, 0)
		}
		if nameLen < 0 || nameLen > len(rest) {
			return nil, bad("entry %d: name runs past the end", i)
		}
		e.Path = string(rest[:nameLen])
		off += (head + nameLen + 8) &^ 7 // NUL padded to a multiple of 8
	}
	for off+8 <= len(body) {
		sig := body[off : off+4]
		size := int(binary.BigEndian.Uint32(body[off+4:]))
		if sig[0] < 'A' || sig[0] > 'Z' {
			return nil, bad("extension %q (a split or sparse index) is not supported", sig)
		}
		if string(sig) == "UNTR" && off+8+size <= len(body) {
			ix.Untracked = append([]byte(nil), body[off+8:off+8+size]...)
		}
		off += 8 + size
	}
	if off != len(body) {
		return nil, bad("extensions run past the end")
	}
	return ix, nil
}

func indexTime(sec, nsec uint32) time.Time {
	if sec == 0 && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(int64(sec), int64(nsec))
}

// decodeVarint reads git's offset varint (varint.c); used is 0 when it
// does not decode.
func decodeVarint(b []byte) (v uint64, used int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 127)
	used = 1
	for c&128 != 0 {
		v++
		if v == 0 || v>>57 != 0 || used >= len(b) {
			return 0, 0
		}
		c = b[used]
		used++
		v = v<<7 + uint64(c&127)
	}
	return v, used
}

func encodeVarint(v uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 127)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 128 | byte(v&127)
	}
	return buf[pos:]
}

// Encode writes the index in git's format, entries sorted by path and
// stage, version 3 when an entry has extended flags and version 2 does
// not hold them, with its trailing checksum.
func (ix *Index) Encode(w io.Writer) error {
	version := ix.Version
	if version < 2 || version > 4 {
		return fmt.Errorf("%w: version %d", ErrIndexFormat, version)
	}
	entries := make([]*IndexEntry, len(ix.Entries))
	for i := range ix.Entries {
		e := &ix.Entries[i]
		entries[i] = e
		if (e.SkipWorktree || e.IntentToAdd) && version == 2 {
			version = 3
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].Path != entries[j].Path {
			return entries[i].Path < entries[j].Path
		}
		return entries[i].Stage < entries[j].Stage
	})
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	var hdr [12]byte
	copy(hdr[:], "DIRC")
	binary.BigEndian.PutUint32(hdr[4:], version)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(entries)))
	bw.Write(hdr[:])
	var prev string
	var b [64]byte
	for _, e := range entries {
		put := func(k int, v uint32) { binary.BigEndian.PutUint32(b[4*k:], v) }
		sec := func(t time.Time) (uint32, uint32) {
			if t.IsZero() {
				return 0, 0
			}
			return uint32(t.Unix()), uint32(t.Nanosecond())
		}
		cs, cn := sec(e.Stat.CTime)
		ms, mn := sec(e.Stat.MTime)
		put(0, cs)
		put(1, cn)
		put(2, ms)
		put(3, mn)
		put(4, e.Stat.Dev)
		put(5, e.Stat.Ino)
		put(6, uint32(e.Mode))
		put(7, e.Stat.UID)
		put(8, e.Stat.GID)
		put(9, e.Stat.Size)
		copy(b[40:60], e.OID[:])
		flags := uint16(e.Stage&3) << flagStageShift
		if e.AssumeValid {
			flags |= flagAssumeValid
		}
		flags |= uint16(min(len(e.Path), flagNameMask))
		head := 62
		if e.SkipWorktree || e.IntentToAdd {
			flags |= flagExtended
			var ext uint16
			if e.SkipWorktree {
				ext |= flagSkipWorktree
			}
			if e.IntentToAdd {
				ext |= flagIntentToAdd
			}
			binary.BigEndian.PutUint16(b[62:], ext)
			head = 64
		}
		binary.BigEndian.PutUint16(b[60:], flags)
		bw.Write(b[:head])
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.Path) && prev[common] == e.Path[common] {
				common++
			}
			bw.Write(encodeVarint(uint64(len(prev) - common)))
			bw.WriteString(e.Path[common:])
			bw.WriteByte(0)
			prev = e.Path
			continue
		}
		bw.WriteString(e.Path)
		pad := (head+len(e.Path)+8)&^7 - head - len(e.Path)
		bw.Write(make([]byte, pad))
	}
	if ix.Tree != nil {
		var ext []byte
		var put func(t *CacheTree)
		put = func(t *CacheTree) {
			ext = append(ext, t.Name...)
			ext = append(ext, 0)
			ext = fmt.Appendf(ext, "%d %d\n", t.Entries, len(t.Subtrees))
			if t.Entries >= 0 {
				ext = append(ext, t.OID[:]...)
			}
			for _, c := range t.Subtrees {
				put(c)
			}
		}
		put(ix.Tree)
		bw.WriteString("TREE")
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(ext)))
		bw.Write(n[:])
		bw.Write(ext)
	}
	if len(ix.Untracked) > 0 {
		bw.WriteString("UNTR")
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(ix.Untracked)))
		bw.Write(n[:])
		bw.Write(ix.Untracked)
	}
	if ix.FSMonitorToken != "" {
		// version, token, then an empty EWAH bitmap of the dirty
		// entries: 0 bits, one run-length word (0), its position 0.
		var ext []byte
		ext = binary.BigEndian.AppendUint32(ext, 2)
		ext = append(append(ext, ix.FSMonitorToken...), 0)
		ewah := binary.BigEndian.AppendUint32(nil, 0)
		ewah = binary.BigEndian.AppendUint32(ewah, 1)
		ewah = binary.BigEndian.AppendUint64(ewah, 0)
		ewah = binary.BigEndian.AppendUint32(ewah, 0)
		ext = binary.BigEndian.AppendUint32(ext, uint32(len(ewah)))
		ext = append(ext, ewah...)
		bw.WriteString("FSMN")
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(ext)))
		bw.Write(n[:])
		bw.Write(ext)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
