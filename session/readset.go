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
// snapshot, files.go).
//
// It also counts the reads in flight on a snapshot: one begins under the
// session's lock and ends without it. A session is not unloaded while a
// read is in flight (its record would land in a set nobody saves), and a
// finished session whose unload waits for its reads is handed to the
// janitor by the last of them (park, end).
type readSet struct {
	mu           sync.Mutex // guards the fields below
	all, unsaved map[string]gitstore.OID
	readers      int  // reads in flight
	parked       bool // a finished session's unload waits for readers
}

func newReadSet(saved map[string]gitstore.OID) *readSet {
	if saved == nil {
		saved = map[string]gitstore.OID{}
	}
	return &readSet{all: saved, unsaved: map[string]gitstore.OID{}}
}

// begin counts a read in flight; the session's lock must be held.
func (r *readSet) begin() {
	r.mu.Lock()
	r.readers++
	r.mu.Unlock()
}

// record adds a read of base path p at blob id, during a read begun with
// begin.
func (r *readSet) record(p string, id gitstore.OID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.all[p]; !seen {
		r.all[p] = id
		r.unsaved[p] = id
	}
}

// end ends a read begun with begin. handOver is true when it was the
// last read a parked unload waited for: the caller hands the session to
// the janitor.
func (r *readSet) end() (handOver bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readers--
	if r.readers == 0 && r.parked {
		r.parked = false
		return true
	}
	return false
}

// park reports whether reads are in flight, and if so marks the set so
// that the last of them hands the session over (end). The session's lock
// must be held.
func (r *readSet) park() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parked = r.readers > 0
	return r.parked
}

// reading reports whether reads are in flight.
func (r *readSet) reading() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readers > 0
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

// snapshot returns a copy of every read (nil for none).
func (r *readSet) snapshot() map[string]gitstore.OID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return nil
	}
	return maps.Clone(r.all)
}
