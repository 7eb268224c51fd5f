package gitstore

import (
	"context"
	"fmt"
)

// RawObject is one object as git stores it, without its header: what
// moves between a repository and another copy of its objects (a cluster's
// store of sessions' objects).
type RawObject struct {
	ID   OID
	Kind Kind
	Data []byte
}

// ReadRaw returns object id as it is stored.
func (r *Repo) ReadRaw(ctx context.Context, id OID) (RawObject, error) {
	obj, err := r.readObject(ctx, id)
	if err != nil {
		return RawObject{}, err
	}
	return RawObject{ID: id, Kind: obj.kind, Data: obj.data}, nil
}

// Check says whether o's content hashes to its id as its kind.
func (o RawObject) Check() error {
	if got := HashObject(o.Kind, o.Data); got != o.ID {
		return fmt.Errorf("object %s: %w: its content hashes to %s", o.ID, ErrCorrupt, got)
	}
	return nil
}

// Links returns the objects o names: a commit's tree and parents, a
// tree's entries (submodules' commits aside, which live elsewhere), none
// for a blob or a tag's target.
func (o RawObject) Links() ([]OID, error) {
	switch o.Kind {
	case KindCommit:
		c, err := decodeCommit(o.ID, o.Data)
		if err != nil {
			return nil, err
		}
		return append([]OID{c.Tree}, c.Parents...), nil
	case KindTree:
		t, err := decodeTree(o.ID, o.Data)
		if err != nil {
			return nil, err
		}
		out := make([]OID, 0, len(t.Entries))
		for _, e := range t.Entries {
			if e.Mode != ModeGitlink {
				out = append(out, e.OID)
			}
		}
		return out, nil
	}
	return nil, nil
}
