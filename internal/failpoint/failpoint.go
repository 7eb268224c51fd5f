// Package failpoint is the seam crash tests use to stop the write path at
// one of its steps. Production code calls Hit at each step; nothing
// happens unless a test enabled that step, and a disabled Hit is one
// atomic load.
//
// A crash test's child process enables one step with a function that
// kills the process (SIGKILL), so the parent finds exactly the state a
// crash at that step leaves. Enable is for tests only.
package failpoint

import (
	"sync"
	"sync/atomic"
)

// Step names one step of the write path, in the order a mutation takes
// them.
type Step string

// The steps of a durable write: gitstore writes the objects (temporary
// files fsynced), renames the pack and then its index into place, and
// fsyncs the directory; the session engine then moves the session's live
// ref and commits the store transaction. An accept or an undo takes the
// same steps with the branch's ref (its commits are loose objects: no
// pack), and one more before the ref moves: the store records the move in
// flight (IntentRecorded), so that a restart knows which commit to look
// for on the branch.
const (
	ObjectsWritten Step = "objects-written"
	PackRenamed    Step = "pack-renamed"
	IndexRenamed   Step = "index-renamed"
	DirSynced      Step = "dir-synced"
	IntentRecorded Step = "intent-recorded"
	RefMoved       Step = "ref-moved"
	StoreCommitted Step = "store-committed"
	// RefsPartlyMoved is inside a group commit of several mutations
	// (package session's committer): the first session's live ref is in
	// place, the others' not yet.
	RefsPartlyMoved Step = "refs-partly-moved"
	// EnvironmentBuilt: an environment layer (package workdir) is
	// complete and synced under its temporary name, not yet renamed.
	EnvironmentBuilt Step = "environment-built"
)

// Steps lists every step of a session's mutation in write order.
var Steps = []Step{ObjectsWritten, PackRenamed, IndexRenamed, DirSynced, RefMoved, StoreCommitted}

// BatchSteps lists every step of a group commit of several mutations in
// write order: Steps with the moves of the sessions' refs in between.
var BatchSteps = []Step{ObjectsWritten, PackRenamed, IndexRenamed, DirSynced, RefsPartlyMoved, RefMoved, StoreCommitted}

// BranchSteps lists every step of an accept or an undo in write order.
var BranchSteps = []Step{ObjectsWritten, DirSynced, IntentRecorded, RefMoved, StoreCommitted}

var (
	enabled atomic.Bool
	mu      sync.Mutex // guards hooks
	hooks   = map[Step]func(){}
)

// Hit runs the function enabled for step, if any.
func Hit(step Step) {
	if !enabled.Load() {
		return
	}
	mu.Lock()
	fn := hooks[step]
	mu.Unlock()
	if fn != nil {
		fn()
	}
}

// Enable makes Hit(step) call fn; a nil fn disables the step.
func Enable(step Step, fn func()) {
	mu.Lock()
	defer mu.Unlock()
	if fn == nil {
		delete(hooks, step)
	} else {
		hooks[step] = fn
	}
	enabled.Store(len(hooks) > 0)
}
