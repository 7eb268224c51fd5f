package gitstore

// Held is what r keeps in memory that could follow the repository's
// growth: the objects and packs its own index holds, the packs the locator
// knows and the packs whose check it remembers. Tests bound them.
func Held(r *Repo) (ownObjects, ownPacks, locatorPacks, checkedPacks int) {
	ownObjects, ownPacks = r.packs.counts()
	return ownObjects, ownPacks, r.locator.size(), r.checks.size()
}

// WithRunHook returns o with hook called at the start of every
// housekeeping run, after it has counted the packs written before it
// (tests slow runs down with it).
func WithRunHook(o Options, hook func()) Options {
	o.runHook = hook
	return o
}

// GoGitPacks lists the packs (base names) the go-git storages see.
func GoGitPacks(r *Repo) ([]string, error) {
	s := r.pool.newStorage()
	defer s.Close()
	packs, err := s.ObjectPacks()
	var out []string
	for _, h := range packs {
		out = append(out, "pack-"+h.String())
	}
	return out, err
}

// OnLockCommitted makes fn run each time a ref lock was renamed over its
// file (from then on another writer may hold that lock), until the test
// ends.
func OnLockCommitted(tb interface{ Cleanup(func()) }, fn func(path string)) {
	testHookLockCommitted = fn
	tb.Cleanup(func() { testHookLockCommitted = nil })
}

// DropReach makes r forget what it knows the shared refs reach, so the
// next scoped resolution of an id walks history again.
func DropReach(r *Repo) {
	r.reach.sem <- struct{}{}
	r.reach.drop()
	<-r.reach.sem
}
