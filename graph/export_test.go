package graph

// SetBeforeJobForTest makes the graph's workers call f before each job.
func SetBeforeJobForTest(g *Graph, f func()) { g.beforeJob = f }
