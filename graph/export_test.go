package graph

// SetBeforeJobForTest makes the graph's workers call f before each job.
func SetBeforeJobForTest(g *Graph, f func()) { g.beforeJob = f }

// HeldForTest is what g keeps per session: the sessions with a delta and
// the index from session to repository, the paths of the inverted index,
// the overlaps remembered as reported, and the queued jobs, over every
// repository.
func HeldForTest(g *Graph) (sessions, where, paths, reported, jobs int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	where = len(g.where)
	for _, rs := range g.repos {
		rs.mu.Lock()
		sessions += len(rs.sessions)
		paths += len(rs.byPath)
		reported += len(rs.reported)
		rs.mu.Unlock()
		rs.q.mu.Lock()
		jobs += len(rs.q.jobs)
		rs.q.mu.Unlock()
	}
	return sessions, where, paths, reported, jobs
}
