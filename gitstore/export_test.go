package gitstore

// Held is what r keeps in memory that could follow the repository's
// growth: the objects and packs its own index holds, the packs the locator
// knows and the packs whose check it remembers. Tests bound them.
func Held(r *Repo) (ownObjects, ownPacks, locatorPacks, checkedPacks int) {
	ownObjects, ownPacks = r.packs.counts()
	return ownObjects, ownPacks, r.locator.size(), r.checks.size()
}
