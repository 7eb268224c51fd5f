package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Signature is an author or committer line.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

func (s Signature) encode() []byte {
	b := []byte(s.Name + " <" + s.Email + "> ")
	b = strconv.AppendInt(b, s.When.Unix(), 10)
	_, off := s.When.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	return append(b, fmt.Sprintf(" %c%02d%02d", sign, off/3600, off%3600/60)...)
}

func parseSignature(line string) (Signature, error) {
	lt := strings.LastIndexByte(line, '<')
	gt := strings.LastIndexByte(line, '>')
	if lt < 0 || gt < lt {
		return Signature{}, fmt.Errorf("%w: bad signature %q", ErrCorrupt, line)
	}
	s := Signature{Name: strings.TrimSpace(line[:lt]), Email: line[lt+1 : gt]}
	fields := strings.Fields(line[gt+1:])
	if len(fields) == 2 {
		sec, err1 := strconv.ParseInt(fields[0], 10, 64)
		tz := fields[1]
		if err1 == nil && len(tz) == 5 {
			h, _ := strconv.Atoi(tz[1:3])
			m, _ := strconv.Atoi(tz[3:5])
			off := h*3600 + m*60
			if tz[0] == '-' {
				off = -off
			}
			s.When = time.Unix(sec, 0).In(time.FixedZone("", off))
		}
	}
	return s, nil
}

// Commit is a decoded commit object.
type Commit struct {
	OID       OID
	Tree      OID
	Parents   []OID
	Author    Signature
	Committer Signature
	Message   string
}

// NewCommit describes a commit to write.
type NewCommit struct {
	Tree      OID
	Parents   []OID
	Author    Signature
	Committer Signature // defaults to Author
	Message   string    // a final newline is added when missing
}

// encode returns the canonical commit encoding.
func (c NewCommit) encode() []byte {
	var b bytes.Buffer
	b.WriteString("tree " + c.Tree.String() + "\n")
	for _, p := range c.Parents {
		b.WriteString("parent " + p.String() + "\n")
	}
	committer := c.Committer
	if committer.Name == "" && committer.Email == "" {
		committer = c.Author
	}
	b.WriteString("author ")
	b.Write(c.Author.encode())
	b.WriteString("\ncommitter ")
	b.Write(committer.encode())
	b.WriteString("\n\n")
	b.WriteString(c.Message)
	if c.Message != "" && !strings.HasSuffix(c.Message, "\n") {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// AddCommit queues a commit; its tree and parents must already exist or be
// in the same batch.
func (b *Batch) AddCommit(c NewCommit) OID { return b.Add(KindCommit, c.encode()) }

// WriteCommit writes one commit durably.
func (r *Repo) WriteCommit(ctx context.Context, c NewCommit) (OID, error) {
	b := r.NewBatch()
	id := b.AddCommit(c)
	return id, b.Flush(ctx)
}

// Commit reads and decodes commit id.
func (r *Repo) Commit(ctx context.Context, id OID) (*Commit, error) {
	data, err := r.readKind(ctx, id, KindCommit)
	if err != nil {
		return nil, err
	}
	return decodeCommit(id, data)
}

// TreeOf returns the tree that id stands for: id itself for a tree, the
// commit's tree for a commit, and ZeroOID (the empty tree) for ZeroOID.
// It reads the object at most once.
func (r *Repo) TreeOf(ctx context.Context, id OID) (OID, error) {
	if id.IsZero() {
		return id, nil
	}
	if _, ok := r.trees.Get(id); ok {
		return id, nil
	}
	obj, err := r.readObject(ctx, id)
	if err != nil {
		return OID{}, err
	}
	switch obj.kind {
	case KindTree:
		t, err := decodeTree(id, obj.data)
		if err != nil {
			return OID{}, err
		}
		r.trees.Add(id, t)
		return id, nil
	case KindCommit:
		c, err := decodeCommit(id, obj.data)
		if err != nil {
			return OID{}, err
		}
		return c.Tree, nil
	}
	return OID{}, fmt.Errorf("object %s is a %s, not a tree or a commit: %w", id, obj.kind, ErrWrongKind)
}

func decodeCommit(id OID, data []byte) (*Commit, error) {
	c := &Commit{OID: id}
	head, msg, _ := bytes.Cut(data, []byte("\n\n"))
	c.Message = string(msg)
	for _, line := range strings.Split(string(head), "\n") {
		key, val, _ := strings.Cut(line, " ")
		var err error
		switch key {
		case "tree":
			c.Tree, err = ParseOID(val)
		case "parent":
			var p OID
			p, err = ParseOID(val)
			c.Parents = append(c.Parents, p)
		case "author":
			c.Author, err = parseSignature(val)
		case "committer":
			c.Committer, err = parseSignature(val)
		}
		if err != nil {
			return nil, fmt.Errorf("commit %s: %v: %w", id, err, ErrCorrupt)
		}
	}
	if c.Tree.IsZero() {
		return nil, fmt.Errorf("commit %s: no tree: %w", id, ErrCorrupt)
	}
	return c, nil
}

// peel follows annotated tags from id to the object they point at.
func (r *Repo) peel(ctx context.Context, id OID) (OID, Kind, error) {
	for range 16 {
		obj, err := r.readObject(ctx, id)
		if err != nil {
			return OID{}, 0, err
		}
		if obj.kind != KindTag {
			return id, obj.kind, nil
		}
		if id, err = tagTarget(id, obj.data); err != nil {
			return OID{}, 0, err
		}
	}
	return OID{}, 0, fmt.Errorf("tag %s: nested too deep: %w", id, ErrCorrupt)
}
