package session

import (
	"maps"
	"sync"

	"github.com/sessiond/sessiond/gitstore"
)

// readSet is a loaded session's read set: the base blob id of every base
// file it read (the first read of a path wins), and which of them the
// store does not have yet. It has its own mutex, so that a read records
// what it read after letting the session's lock go (reads run on a
// snapshot, files.go); everything else that touches it holds the
// session's lock too.
//
// Sealing it is how a session leaves memory without losing a read: once
// sealed (the session is being unloaded), record tells the reader to save
// its read in the store itself, since nobody will save the set again.
type readSet struct {
	mu           sync.Mutex // guards the fields below
	all, unsaved map[string]gitstore.OID
	sealed       bool
}

func newReadSet(saved map[string]gitstore.OID) *readSet {
	if saved == nil {
		saved = map[string]gitstore.OID{}
	}
	return &readSet{all: saved, unsaved: map[string]gitstore.OID{}}
}

// record adds a read of base path p at blob id. saveNow is true when the
// set is sealed and the read is new: the caller saves it in the store.
func (r *readSet) record(p string, id gitstore.OID) (saveNow bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.all[p]; seen {
		return false
	}
	r.all[p] = id
	if r.sealed {
		return true
	}
	r.unsaved[p] = id
	return false
}

// pending returns a copy of the reads the store does not have (nil for
// none); once a transaction holding them commits, the caller passes them
// to saved.
func (r *readSet) pending() map[string]gitstore.OID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unsaved) == 0 {
		return nil
	}
	return maps.Clone(r.unsaved)
}

// saved forgets the reads in done as unsaved: the store has them now.
// Reads recorded meanwhile stay unsaved.
func (r *readSet) saved(done map[string]gitstore.OID) {
	if len(done) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range done {
		delete(r.unsaved, p)
	}
}

// seal marks the set as no longer saved by the session and returns the
// reads it still has to save (nil for none); unseal undoes it when saving
// them failed.
func (r *readSet) seal() map[string]gitstore.OID {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = true
	if len(r.unsaved) == 0 {
		return nil
	}
	out := r.unsaved
	r.unsaved = map[string]gitstore.OID{}
	return out
}

func (r *readSet) unseal(back map[string]gitstore.OID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = false
	maps.Copy(r.unsaved, back)
}

// snapshot returns a copy of every read (nil for none).
func (r *readSet) snapshot() map[string]gitstore.OID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return nil
	}
	return maps.Clone(r.all)
}
