// Package housekeeping keeps a repository's object directory in shape
// between git gc runs, as Gitaly's internal/git/housekeeping does: a
// strategy (HeuristicStrategy) looks at what the directory holds (State)
// and decides what to do (Plan): remove old crash debris, delete
// superseded packs, merge the packs sessiond writes geometrically and pack
// loose objects, so a repository stays under PackLimit packs; a Manager
// runs it for one repository (when it opens, every Interval, and after
// every few packs written) and reports what failed. Carrying a plan out
// is the repository's (package gitstore implements Repository: it owns
// the object files and the pack writer).
//
// Invariants:
//   - The strategy does no I/O: the same State always gives the same Plan,
//     so it is tested on its own. The retirement rank (MarkCovered) is a
//     strict order on what a pack holds, so every process ranks alike and
//     no two packs cover each other.
//   - One run at a time per Manager; a run that finds another in progress
//     returns at once with an empty report.
//   - Writers cannot outrun it: once the packs written since a run listed
//     the directory reach a quarter of the pack limit, a writer waits (in
//     PackWritten) for a run that started after its pack to end.
//   - A failed run is never silent: it is logged and counted in
//     sessiond_housekeeping_failures_total (Collectors), and retried by the
//     next run; nothing is lost by one.
//
// Concurrency: a Manager is safe for concurrent use; its background
// goroutine ends with Close.
package housekeeping
