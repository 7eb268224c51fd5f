package gitstore

// Entry is one entry of a tree at a full path: what a lookup or a listing
// returns. Directories have Mode ModeDir and the id of their tree.
type Entry struct {
	Path string
	Mode Mode
	OID  OID
}

// Change is one edit handed to the tree builder. A change with Delete set
// removes whatever is at Path (a file or a whole subtree; absent is a
// no-op). Otherwise it puts a blob (or gitlink) with Mode and OID at Path,
// replacing a file or a whole subtree that was there.
type Change struct {
	Path   string
	Delete bool
	Mode   Mode
	OID    OID
}
