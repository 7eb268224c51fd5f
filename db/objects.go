package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/gitstore"
)

// The objects of sessions' writes in a cluster (repo_objects), kept once
// per repository by id. Both stores have them (one schema, one
// conformance suite); only a cluster, on PostgreSQL, writes them.

var _ cluster.ObjectTx = (*store)(nil)

// objectChunk bounds the ids or rows of one statement (SQLite's default
// limit of variables is 32766, PostgreSQL's 65535).
const objectChunk = 500

// MissingObjects implements cluster.ObjectTx: the ids of ids the store
// does not hold for repo, in ids' order.
func (s *store) MissingObjects(ctx context.Context, repo string, ids []gitstore.OID) ([]gitstore.OID, error) {
	held := map[gitstore.OID]bool{}
	err := s.eachObjectChunk(ctx, repo, ids, "oid", func(sc scanner) error {
		var id gitstore.OID
		if err := sc.Scan(oidCol{&id}); err != nil {
			return err
		}
		held[id] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("repository %q: look up objects: %w", repo, err)
	}
	var out []gitstore.OID
	for _, id := range ids {
		if !held[id] {
			held[id] = true // once, also when ids repeats it
			out = append(out, id)
		}
	}
	return out, nil
}

// GetObjects implements cluster.ObjectTx: the objects of ids the store
// holds for repo (the others are left out), each checked against its id.
func (s *store) GetObjects(ctx context.Context, repo string, ids []gitstore.OID) ([]gitstore.RawObject, error) {
	var out []gitstore.RawObject
	err := s.eachObjectChunk(ctx, repo, ids, "oid, kind, data", func(sc scanner) error {
		var o gitstore.RawObject
		var kind int64
		if err := sc.Scan(oidCol{&o.ID}, &kind, &o.Data); err != nil {
			return err
		}
		o.Kind = gitstore.Kind(kind)
		if err := o.Check(); err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("repository %q: read objects: %w", repo, err)
	}
	return out, nil
}

// eachObjectChunk runs SELECT cols for repo's objects of ids, a chunk at
// a time, and hands each row to fn.
func (s *store) eachObjectChunk(ctx context.Context, repo string, ids []gitstore.OID, cols string, fn func(scanner) error) error {
	for len(ids) > 0 {
		n := min(len(ids), objectChunk)
		f := filter{}
		f.add("repo = ?", repo)
		vals := make([]string, n)
		for i, id := range ids[:n] {
			vals[i] = id.String()
		}
		f.in("oid", vals)
		rs, err := s.r.query(ctx, "SELECT "+cols+" FROM repo_objects"+f.where(), f.args...)
		if err != nil {
			return err
		}
		for rs.Next() {
			if err := fn(rs); err != nil {
				rs.Close()
				return err
			}
		}
		err = rs.Err()
		rs.Close()
		if err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// PutObjects implements cluster.ObjectTx: store objs for repo; one the
// store holds already is kept as it is (its id is its content).
func (s *store) PutObjects(ctx context.Context, repo string, objs []gitstore.RawObject) error {
	for len(objs) > 0 {
		n := min(len(objs), objectChunk/4)
		var sb strings.Builder
		sb.WriteString("INSERT INTO repo_objects (repo, oid, kind, data) VALUES ")
		args := make([]any, 0, 4*n)
		for i, o := range objs[:n] {
			if i > 0 {
				sb.WriteString(", ")
			}
			k := len(args)
			sb.WriteString("($" + strconv.Itoa(k+1) + ", $" + strconv.Itoa(k+2) + ", $" + strconv.Itoa(k+3) + ", $" + strconv.Itoa(k+4) + ")")
			data := o.Data
			if data == nil {
				data = []byte{} // the empty blob is content too
			}
			args = append(args, repo, o.ID.String(), int64(o.Kind), data)
		}
		sb.WriteString(" ON CONFLICT (repo, oid) DO NOTHING")
		if _, err := s.r.exec(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("repository %q: store %d objects: %w", repo, n, err)
		}
		objs = objs[n:]
	}
	return nil
}
