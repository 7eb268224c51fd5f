package gitstore

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
)

// Pack index files, version 2 (git's Documentation/gitformat-pack.txt):
// magic and version, a fan-out table of 256 cumulative counts by first
// byte, the object ids sorted, their entries' CRC-32s, their offsets (31
// bits, or an index into a table of 64-bit offsets), the pack's checksum
// and the index's own.

// idxTable is a pack index read whole: ids ascending, with each entry's
// CRC-32 and offset in the pack.
type idxTable struct {
	ids  []OID
	crcs []uint32
	offs []int64
}

// readIdx reads the version 2 index at path.
func readIdx(path string) (idxTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return idxTable{}, err
	}
	bad := func(why string) (idxTable, error) {
		return idxTable{}, fmt.Errorf("pack index %s: %s: %w", path, why, ErrCorrupt)
	}
	if len(b) < idxHeader+idxFanout+idxTrailer || !bytes.Equal(b[:4], idxMagic) || binary.BigEndian.Uint32(b[4:8]) != 2 {
		return bad("not a version 2 index")
	}
	n := int(binary.BigEndian.Uint32(b[idxHeader+idxFanout-4:]))
	names := idxHeader + idxFanout
	crcs := names + n*OIDSize
	offs := crcs + n*4
	large := offs + n*4
	if len(b) < large+idxTrailer {
		return bad("truncated")
	}
	t := idxTable{ids: make([]OID, n), crcs: make([]uint32, n), offs: make([]int64, n)}
	for i := range n {
		copy(t.ids[i][:], b[names+i*OIDSize:])
		t.crcs[i] = binary.BigEndian.Uint32(b[crcs+i*4:])
		o := binary.BigEndian.Uint32(b[offs+i*4:])
		if o&0x80000000 == 0 {
			t.offs[i] = int64(o)
			continue
		}
		at := large + int(o&0x7fffffff)*8
		if at+8 > len(b)-idxTrailer {
			return bad("large offset out of range")
		}
		t.offs[i] = int64(binary.BigEndian.Uint64(b[at:]))
	}
	return t, nil
}

// writeIdx writes the version 2 index of a pack whose checksum is
// packSum, whose object ids[i] starts at offs[i] with an entry whose
// CRC-32 is crcs[i]. The ids need not be sorted; they must be distinct.
func writeIdx(w io.Writer, ids []OID, crcs []uint32, offs []int64, packSum [OIDSize]byte) error {
	cmp := func(a, b OID) int { return bytes.Compare(a[:], b[:]) }
	if !slices.IsSortedFunc(ids, cmp) {
		perm := make([]int, len(ids))
		for i := range perm {
			perm[i] = i
		}
		slices.SortFunc(perm, func(a, b int) int { return cmp(ids[a], ids[b]) })
		sids, scrcs, soffs := make([]OID, len(ids)), make([]uint32, len(ids)), make([]int64, len(ids))
		for i, j := range perm {
			sids[i], scrcs[i], soffs[i] = ids[j], crcs[j], offs[j]
		}
		ids, crcs, offs = sids, scrcs, soffs
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return fmt.Errorf("write pack index: object %s twice", ids[i])
		}
	}
	h := sha1.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	bw.Write(idxMagic)
	var u32 [4]byte
	put32 := func(v uint32) {
		binary.BigEndian.PutUint32(u32[:], v)
		bw.Write(u32[:])
	}
	put32(2)
	var fan [256]uint32
	for _, id := range ids {
		fan[id[0]]++
	}
	var total uint32
	for _, c := range fan {
		total += c
		put32(total)
	}
	for _, id := range ids {
		bw.Write(id[:])
	}
	for _, c := range crcs {
		put32(c)
	}
	var large []int64
	for _, o := range offs {
		if o < 0x80000000 {
			put32(uint32(o))
			continue
		}
		put32(0x80000000 | uint32(len(large)))
		large = append(large, o)
	}
	var u64 [8]byte
	for _, o := range large {
		binary.BigEndian.PutUint64(u64[:], uint64(o))
		bw.Write(u64[:])
	}
	bw.Write(packSum[:])
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
