package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// runner runs SQL with $1-style placeholders, which both dialects accept.
// Implementations translate driver errors into session sentinels before
// returning, including errors from Scan, so store code sees only those.
type runner interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (rows, error)
	queryRow(ctx context.Context, query string, args ...any) scanner
}

type scanner interface {
	Scan(dest ...any) error
}

type rows interface {
	scanner
	Next() bool
	Err() error
	Close()
}

// store implements session.Tx once for both dialects; the dialects differ
// only in their runner, their migrations and how they begin a transaction.
type store struct {
	r runner
	// begin runs fn in a new transaction; nil when r is already one.
	begin func(ctx context.Context, fn func(runner) error) error
}

var (
	_ session.Tx   = (*store)(nil)
	_ changeset.Tx = (*store)(nil)
)

// InTx implements session.Store. Inside a transaction it runs fn in the
// same transaction.
func (s *store) InTx(ctx context.Context, fn func(session.Tx) error) error {
	return s.atomic(ctx, func(t *store) error { return fn(t) })
}

// atomic runs fn in a transaction, the current one if there is one.
func (s *store) atomic(ctx context.Context, fn func(*store) error) error {
	if s.begin == nil {
		return fn(s)
	}
	return s.begin(ctx, func(r runner) error { return fn(&store{r: r}) })
}

// Column values. Object ids are hex text, NULL for the zero id; times are
// UTC with microsecond precision (what Postgres keeps), NULL for the zero
// time; the SQLite runner turns time.Time into integer microseconds.

func oidArg(o gitstore.OID) any {
	if o.IsZero() {
		return nil
	}
	return o.String()
}

// oidText is the form compare-and-swap compares with COALESCE(col, ”).
func oidText(o gitstore.OID) string {
	if o.IsZero() {
		return ""
	}
	return o.String()
}

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}

func uuidArg(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id.String()
}

// oidCol scans a nullable hex object id.
type oidCol struct{ o *gitstore.OID }

func (c oidCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.o = gitstore.OID{}
		return nil
	case string:
		return c.o.UnmarshalText([]byte(v))
	case []byte:
		return c.o.UnmarshalText(v)
	}
	return fmt.Errorf("db: cannot scan %T into an object id", src)
}

// timeCol scans a nullable time: a timestamptz or integer microseconds.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case time.Time:
		*c.t = v.UTC()
	case int64:
		*c.t = time.UnixMicro(v).UTC()
	default:
		return fmt.Errorf("db: cannot scan %T into a time", src)
	}
	return nil
}

// uuidCol scans a nullable uuid.
type uuidCol struct{ id *uuid.UUID }

func (c uuidCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.id = uuid.Nil
		return nil
	case string:
		id, err := uuid.Parse(v)
		*c.id = id
		return err
	case []byte:
		id, err := uuid.ParseBytes(v)
		*c.id = id
		return err
	case [16]byte:
		*c.id = v
		return nil
	}
	return fmt.Errorf("db: cannot scan %T into a uuid", src)
}

// textCol scans text or JSON into a string whatever the driver hands over.
type textCol struct{ s *string }

func (c textCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.s = ""
	case string:
		*c.s = v
	case []byte:
		*c.s = string(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("db: cannot scan %T into text: %w", src, err)
		}
		*c.s = string(b)
	}
	return nil
}

func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("db: encode json: %w", err)
	}
	return string(b), nil
}

func limitArg(n int) int64 {
	if n <= 0 {
		return math.MaxInt64
	}
	return int64(n)
}

// filter builds a WHERE clause with numbered placeholders.
type filter struct {
	conds []string
	args  []any
}

func (f *filter) add(cond string, arg any) {
	f.args = append(f.args, arg)
	f.conds = append(f.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(f.args))))
}

// in adds "col IN (vals…)"; no values add no condition.
func (f *filter) in(col string, vals []string) {
	if len(vals) == 0 {
		return
	}
	ph := make([]string, len(vals))
	for i, v := range vals {
		f.args = append(f.args, v)
		ph[i] = "$" + strconv.Itoa(len(f.args))
	}
	f.conds = append(f.conds, col+" IN ("+strings.Join(ph, ", ")+")")
}

func (f *filter) where() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}

// limit appends LIMIT with the next placeholder.
func (f *filter) limit(n int) string {
	f.args = append(f.args, limitArg(n))
	return " LIMIT $" + strconv.Itoa(len(f.args))
}

// Repositories.

func (s *store) CreateRepo(ctx context.Context, r repos.Repo) error {
	_, err := s.r.exec(ctx, `INSERT INTO repos (name, path, origin, created_at) VALUES ($1, $2, $3, $4)`,
		r.Name, r.Path, r.Origin, timeArg(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("repository %q: %w", r.Name, err)
	}
	return nil
}

func scanRepo(sc scanner) (repos.Repo, error) {
	var r repos.Repo
	err := sc.Scan(&r.Name, &r.Path, &r.Origin, timeCol{&r.CreatedAt})
	return r, err
}

func (s *store) GetRepo(ctx context.Context, name string) (repos.Repo, error) {
	r, err := scanRepo(s.r.queryRow(ctx, `SELECT name, path, origin, created_at FROM repos WHERE name = $1`, name))
	if err != nil {
		return r, fmt.Errorf("repository %q: %w", name, err)
	}
	return r, nil
}

func (s *store) ListRepos(ctx context.Context) ([]repos.Repo, error) {
	rs, err := s.r.query(ctx, `SELECT name, path, origin, created_at FROM repos ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list repos: %w", err)
	}
	return collect(rs, scanRepo)
}

// collect scans every row with scan and closes rs.
func collect[T any](rs rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rs.Close()
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Sessions.

const sessionCols = `id, repo, parent, agent_id, agent_name, intent, base_commit, base_ref, mode,
	state, policy, head, seq, checkpoints, created_at, last_active_at, expires_at, caches, env`

// Writable states; a mutation of a session in any other state is refused.
const liveStates = `('active', 'submitted')`

func (s *store) CreateSession(ctx context.Context, ss session.Session) error {
	if ss.Head.IsZero() {
		ss.Head = ss.BaseCommit
	}
	if ss.State == "" {
		ss.State = session.StateActive
	}
	if ss.Mode == "" {
		ss.Mode = session.ModeReadWrite
	}
	if ss.LastActiveAt.IsZero() {
		ss.LastActiveAt = ss.CreatedAt
	}
	policy, err := jsonArg(ss.Policy)
	if err != nil {
		return err
	}
	env, err := envArg(ss.Env)
	if err != nil {
		return err
	}
	_, err = s.r.exec(ctx, `INSERT INTO sessions (`+sessionCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0, 0, $13, $14, $15, $16, $17)`,
		ss.ID.String(), ss.Repo, uuidArg(ss.Parent), ss.AgentID, ss.AgentName, ss.Intent,
		oidArg(ss.BaseCommit), ss.BaseRef, string(ss.Mode), string(ss.State), policy,
		oidArg(ss.Head), timeArg(ss.CreatedAt), timeArg(ss.LastActiveAt), timeArg(ss.ExpiresAt), ss.Caches, env)
	if err != nil {
		return fmt.Errorf("create session %s: %w", ss.ID, err)
	}
	return nil
}

func scanSession(sc scanner) (session.Session, error) {
	var (
		ss                      session.Session
		mode, state, polic, env string
	)
	err := sc.Scan(uuidCol{&ss.ID}, &ss.Repo, uuidCol{&ss.Parent}, &ss.AgentID, &ss.AgentName,
		&ss.Intent, oidCol{&ss.BaseCommit}, &ss.BaseRef, &mode, &state, textCol{&polic},
		oidCol{&ss.Head}, &ss.Seq, &ss.Checkpoints, timeCol{&ss.CreatedAt},
		timeCol{&ss.LastActiveAt}, timeCol{&ss.ExpiresAt}, &ss.Caches, &env)
	if err != nil {
		return ss, err
	}
	if env != "{}" && env != "" {
		if err := json.Unmarshal([]byte(env), &ss.Env); err != nil {
			return ss, fmt.Errorf("db: session %s env: %w", ss.ID, err)
		}
	}
	ss.Mode, ss.State = session.Mode(mode), session.State(state)
	if err := json.Unmarshal([]byte(polic), &ss.Policy); err != nil {
		return ss, fmt.Errorf("db: session %s policy: %w", ss.ID, err)
	}
	return ss, nil
}

func (s *store) GetSession(ctx context.Context, id uuid.UUID) (session.Session, error) {
	ss, err := scanSession(s.r.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1`, id.String()))
	if err != nil {
		return ss, fmt.Errorf("session %s: %w", id, err)
	}
	return ss, nil
}

func (s *store) ListSessions(ctx context.Context, f session.SessionFilter) ([]session.Session, error) {
	var w filter
	if f.Repo != "" {
		w.add("repo = ?", f.Repo)
	}
	if f.State != "" {
		w.add("state = ?", string(f.State))
	}
	if f.AgentID != "" {
		w.add("agent_id = ?", f.AgentID)
	}
	if !f.ExpiredBy.IsZero() {
		w.add("state IN "+liveStates+" AND expires_at <= ?", timeArg(f.ExpiredBy))
	}
	q := `SELECT ` + sessionCols + ` FROM sessions` + w.where() + ` ORDER BY created_at, id` + w.limit(f.Limit)
	rs, err := s.r.query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out, err := collect(rs, scanSession)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// touchAt is the SQL for "last_active_at, but never backwards" with the
// candidate time in placeholder p.
func touchAt(p string) string {
	return `last_active_at = CASE WHEN ` + p + ` > last_active_at THEN ` + p + ` ELSE last_active_at END`
}

func (s *store) SetSessionState(ctx context.Context, id uuid.UUID, from, to session.State, at time.Time) error {
	n, err := s.r.exec(ctx, `UPDATE sessions SET state = $3, `+touchAt("$4")+` WHERE id = $1 AND state = $2`,
		id.String(), string(from), string(to), timeArg(at))
	if err != nil {
		return fmt.Errorf("session %s state: %w", id, err)
	}
	if n == 0 {
		ss, err := s.GetSession(ctx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("session %s state %s to %s: %w", id, from, to,
			&record.ConflictError{Field: "state", Current: string(ss.State)})
	}
	return nil
}

func (s *store) SetSessionHead(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	n, err := s.r.exec(ctx, `UPDATE sessions SET head = $3 WHERE id = $1 AND COALESCE(head, '') = $2`,
		id.String(), oidText(old), oidArg(new))
	if err != nil {
		return fmt.Errorf("session %s head: %w", id, err)
	}
	if n == 0 {
		return s.headConflict(ctx, id)
	}
	return nil
}

func (s *store) SetSessionBase(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	n, err := s.r.exec(ctx, `UPDATE sessions SET base_commit = $3 WHERE id = $1 AND COALESCE(base_commit, '') = $2`,
		id.String(), oidText(old), oidArg(new))
	if err != nil {
		return fmt.Errorf("session %s base: %w", id, err)
	}
	if n == 0 {
		ss, err := s.GetSession(ctx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("session %s base: %w", id, &record.ConflictError{Field: "base", Current: oidText(ss.BaseCommit)})
	}
	return nil
}

func (s *store) headConflict(ctx context.Context, id uuid.UUID) error {
	ss, err := s.GetSession(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("session %s head: %w", id, &record.ConflictError{Field: "head", Current: oidText(ss.Head)})
}

func (s *store) TouchSession(ctx context.Context, id uuid.UUID, at, expiresAt time.Time) error {
	n, err := s.r.exec(ctx, `UPDATE sessions SET `+touchAt("$2")+`, expires_at = COALESCE($3, expires_at) WHERE id = $1`,
		id.String(), timeArg(at), timeArg(expiresAt))
	if err != nil {
		return fmt.Errorf("touch session %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("touch session %s: %w", id, record.ErrNotFound)
	}
	return nil
}

// Overlay and mutation log.

// nextSeq takes the session's next sequence number. The UPDATE locks the
// session row (Postgres) or runs under the database write lock (SQLite)
// until the transaction ends, so concurrent appenders queue and a rolled
// back append gives its number back: numbers never repeat or skip.
func (s *store) nextSeq(ctx context.Context, m session.MutationRecord) (int64, error) {
	q := `UPDATE sessions SET seq = seq + 1, ` + touchAt("$2") + `
		WHERE id = $1 AND state IN ` + liveStates
	args := []any{m.Session.String(), timeArg(m.At)}
	if m.Seq != 0 {
		q += ` AND seq = $3`
		args = append(args, m.Seq-1)
	}
	var seq int64
	err := s.r.queryRow(ctx, q+` RETURNING seq`, args...).Scan(&seq)
	if err == nil {
		return seq, nil
	}
	if !errors.Is(err, record.ErrNotFound) {
		return 0, fmt.Errorf("session %s: %w", m.Session, err)
	}
	ss, err := s.GetSession(ctx, m.Session)
	switch {
	case err != nil:
		return 0, err
	case ss.State.Terminal():
		return 0, fmt.Errorf("session %s is %s: %w", m.Session, ss.State, record.ErrSessionClosed)
	}
	return 0, fmt.Errorf("session %s: %w", m.Session,
		&record.ConflictError{Field: "seq", Current: strconv.FormatInt(ss.Seq, 10)})
}

func (s *store) insertMutation(ctx context.Context, m session.MutationRecord) error {
	paths, old, new := m.Paths, m.Old, m.New
	if paths == nil {
		paths = []string{}
	}
	if old == nil {
		old = []gitstore.OID{}
	}
	if new == nil {
		new = []gitstore.OID{}
	}
	pj, err := jsonArg(paths)
	if err != nil {
		return err
	}
	oj, err := jsonArg(old)
	if err != nil {
		return err
	}
	nj, err := jsonArg(new)
	if err != nil {
		return err
	}
	var ej any
	if m.Exec != nil {
		if ej, err = jsonArg(m.Exec); err != nil {
			return err
		}
	}
	_, err = s.r.exec(ctx, `INSERT INTO mutations (session_id, seq, op, paths, old_blobs, new_blobs, actor, at, exec)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		m.Session.String(), m.Seq, string(m.Op), pj, oj, nj, m.Actor, timeArg(m.At), ej)
	if err != nil {
		return fmt.Errorf("session %s mutation %d: %w", m.Session, m.Seq, err)
	}
	return nil
}

// overlayBatch is how many overlay rows one statement writes or deletes;
// at 4 parameters a row it stays far below both dialects' limits.
const overlayBatch = 500

// putEntries inserts or replaces overlay entries, a batch per statement.
func (s *store) putEntries(ctx context.Context, id uuid.UUID, es []session.OverlayEntry) error {
	for len(es) > 0 {
		n := min(len(es), overlayBatch)
		var q strings.Builder
		args := make([]any, 1, 1+4*n)
		args[0] = id.String()
		q.WriteString(`INSERT INTO overlay_entries (session_id, path, status, blob, mode) VALUES `)
		for i, e := range es[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			k := len(args)
			fmt.Fprintf(&q, "($1, $%d, $%d, $%d, $%d)", k+1, k+2, k+3, k+4)
			args = append(args, e.Path, string(e.Status), oidArg(e.Blob), int64(e.Mode))
		}
		q.WriteString(` ON CONFLICT (session_id, path) DO UPDATE
			SET status = excluded.status, blob = excluded.blob, mode = excluded.mode`)
		if _, err := s.r.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("session %s overlay %q…: %w", id, es[0].Path, err)
		}
		es = es[n:]
	}
	return nil
}

// removeEntries deletes the overlay entries at paths, a batch per statement.
func (s *store) removeEntries(ctx context.Context, id uuid.UUID, paths []string) error {
	for len(paths) > 0 {
		n := min(len(paths), overlayBatch)
		var q strings.Builder
		args := make([]any, 1, 1+n)
		args[0] = id.String()
		q.WriteString(`DELETE FROM overlay_entries WHERE session_id = $1 AND path IN (`)
		for i, p := range paths[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			args = append(args, p)
			q.WriteString("$" + strconv.Itoa(len(args)))
		}
		q.WriteString(")")
		if _, err := s.r.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("session %s overlay %q…: %w", id, paths[0], err)
		}
		paths = paths[n:]
	}
	return nil
}

// foldChanges reduces changes to the last one per path, which is what
// applying them in order leaves, split into puts and removals. One
// statement may not touch a row twice (Postgres refuses an upsert that
// does), so batches need distinct paths.
func foldChanges(changes []session.OverlayChange) (puts []session.OverlayEntry, removes []string) {
	last := make(map[string]int, len(changes))
	for i, c := range changes {
		last[c.Entry.Path] = i
	}
	for i, c := range changes {
		if last[c.Entry.Path] != i {
			continue
		}
		if c.Remove {
			removes = append(removes, c.Entry.Path)
		} else {
			puts = append(puts, c.Entry)
		}
	}
	return puts, removes
}

func (s *store) AppendMutation(ctx context.Context, m session.MutationRecord, changes []session.OverlayChange) (session.MutationRecord, error) {
	err := s.atomic(ctx, func(t *store) error {
		seq, err := t.nextSeq(ctx, m)
		if err != nil {
			return err
		}
		m.Seq = seq
		if err := t.insertMutation(ctx, m); err != nil {
			return err
		}
		puts, removes := foldChanges(changes)
		if err := t.removeEntries(ctx, m.Session, removes); err != nil {
			return err
		}
		return t.putEntries(ctx, m.Session, puts)
	})
	if err != nil {
		return session.MutationRecord{}, err
	}
	return m, nil
}

func (s *store) ReplaceOverlay(ctx context.Context, m session.MutationRecord, entries []session.OverlayEntry) (session.MutationRecord, error) {
	err := s.atomic(ctx, func(t *store) error {
		seq, err := t.nextSeq(ctx, m)
		if err != nil {
			return err
		}
		m.Seq = seq
		if err := t.insertMutation(ctx, m); err != nil {
			return err
		}
		if _, err := t.r.exec(ctx, `DELETE FROM overlay_entries WHERE session_id = $1`, m.Session.String()); err != nil {
			return fmt.Errorf("session %s overlay: %w", m.Session, err)
		}
		changes := make([]session.OverlayChange, len(entries))
		for i, e := range entries {
			changes[i] = session.OverlayChange{Entry: e}
		}
		puts, _ := foldChanges(changes)
		return t.putEntries(ctx, m.Session, puts)
	})
	if err != nil {
		return session.MutationRecord{}, err
	}
	return m, nil
}

func scanEntry(sc scanner) (session.OverlayEntry, error) {
	var (
		e      session.OverlayEntry
		status string
		mode   int64
	)
	err := sc.Scan(&e.Path, &status, oidCol{&e.Blob}, &mode)
	e.Status, e.Mode = session.EntryStatus(status), gitstore.Mode(mode)
	return e, err
}

func (s *store) RecordReads(ctx context.Context, id uuid.UUID, reads map[string]gitstore.OID) error {
	paths := make([]string, 0, len(reads))
	for p := range reads {
		paths = append(paths, p)
	}
	slices.Sort(paths) // a stable statement order, and deterministic batches
	for len(paths) > 0 {
		n := min(len(paths), overlayBatch)
		var q strings.Builder
		args := make([]any, 1, 1+2*n)
		args[0] = id.String()
		q.WriteString(`INSERT INTO session_reads (session_id, path, blob) VALUES `)
		for i, p := range paths[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			k := len(args)
			fmt.Fprintf(&q, "($1, $%d, $%d)", k+1, k+2)
			args = append(args, p, oidText(reads[p]))
		}
		// The first read of a path is the one that matters: later reads of
		// an unchanged base file see the same blob.
		q.WriteString(` ON CONFLICT (session_id, path) DO NOTHING`)
		if _, err := s.r.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("session %s reads: %w", id, err)
		}
		paths = paths[n:]
	}
	return nil
}

func (s *store) ListReads(ctx context.Context, id uuid.UUID) (map[string]gitstore.OID, error) {
	rs, err := s.r.query(ctx, `SELECT path, blob FROM session_reads WHERE session_id = $1`, id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s reads: %w", id, err)
	}
	defer rs.Close()
	out := map[string]gitstore.OID{}
	for rs.Next() {
		var p string
		var o gitstore.OID
		if err := rs.Scan(&p, oidCol{&o}); err != nil {
			return nil, fmt.Errorf("session %s reads: %w", id, err)
		}
		out[p] = o
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("session %s reads: %w", id, err)
	}
	return out, nil
}

func (s *store) ListOverlay(ctx context.Context, id uuid.UUID) ([]session.OverlayEntry, error) {
	rs, err := s.r.query(ctx, `SELECT path, status, blob, mode FROM overlay_entries
		WHERE session_id = $1 ORDER BY path`, id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s overlay: %w", id, err)
	}
	out, err := collect(rs, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("session %s overlay: %w", id, err)
	}
	return out, nil
}

func scanMutation(sc scanner) (session.MutationRecord, error) {
	var (
		m                  session.MutationRecord
		op, pj, oj, nj, ej string
	)
	err := sc.Scan(uuidCol{&m.Session}, &m.Seq, &op, textCol{&pj}, textCol{&oj}, textCol{&nj}, &m.Actor, timeCol{&m.At}, textCol{&ej})
	if err != nil {
		return m, err
	}
	if ej != "" {
		m.Exec = new(session.ExecInfo)
		if err := json.Unmarshal([]byte(ej), m.Exec); err != nil {
			return m, fmt.Errorf("db: mutation %d: %w", m.Seq, err)
		}
	}
	m.Op = session.Op(op)
	for _, c := range []struct {
		src string
		dst any
	}{{pj, &m.Paths}, {oj, &m.Old}, {nj, &m.New}} {
		if err := json.Unmarshal([]byte(c.src), c.dst); err != nil {
			return m, fmt.Errorf("db: mutation %d: %w", m.Seq, err)
		}
	}
	if len(m.Paths) == 0 {
		m.Paths = nil
	}
	if len(m.Old) == 0 {
		m.Old = nil
	}
	if len(m.New) == 0 {
		m.New = nil
	}
	return m, nil
}

func (s *store) ListMutations(ctx context.Context, id uuid.UUID, after int64, limit int) ([]session.MutationRecord, error) {
	rs, err := s.r.query(ctx, `SELECT session_id, seq, op, paths, old_blobs, new_blobs, actor, at, exec
		FROM mutations WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		id.String(), after, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("session %s mutations: %w", id, err)
	}
	out, err := collect(rs, scanMutation)
	if err != nil {
		return nil, fmt.Errorf("session %s mutations: %w", id, err)
	}
	return out, nil
}

// Checkpoints.

const checkpointCols = `id, session_id, n, commit_oid, tree_oid, parent_oid, seq, label, message, created_at`

func (s *store) CreateCheckpoint(ctx context.Context, c session.Checkpoint) (session.Checkpoint, error) {
	if c.Commit.IsZero() || c.Tree.IsZero() {
		return c, fmt.Errorf("create checkpoint: commit and tree are required")
	}
	if c.ID == uuid.Nil {
		c.ID = uuid.New()
	}
	err := s.atomic(ctx, func(t *store) error {
		err := t.r.queryRow(ctx, `UPDATE sessions SET head = $3, checkpoints = checkpoints + 1
			WHERE id = $1 AND COALESCE(head, '') = $2 RETURNING checkpoints`,
			c.Session.String(), oidText(c.Parent), c.Commit.String()).Scan(&c.N)
		if errors.Is(err, record.ErrNotFound) {
			return t.headConflict(ctx, c.Session)
		}
		if err != nil {
			return fmt.Errorf("session %s checkpoint: %w", c.Session, err)
		}
		_, err = t.r.exec(ctx, `INSERT INTO checkpoints (`+checkpointCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.ID.String(), c.Session.String(), c.N, c.Commit.String(), c.Tree.String(),
			oidArg(c.Parent), c.Seq, c.Label, c.Message, timeArg(c.CreatedAt))
		if err != nil {
			return fmt.Errorf("session %s checkpoint %d: %w", c.Session, c.N, err)
		}
		return nil
	})
	if err != nil {
		return session.Checkpoint{}, err
	}
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Microsecond)
	return c, nil
}

func scanCheckpoint(sc scanner) (session.Checkpoint, error) {
	var c session.Checkpoint
	err := sc.Scan(uuidCol{&c.ID}, uuidCol{&c.Session}, &c.N, oidCol{&c.Commit}, oidCol{&c.Tree},
		oidCol{&c.Parent}, &c.Seq, &c.Label, &c.Message, timeCol{&c.CreatedAt})
	return c, err
}

func (s *store) GetCheckpoint(ctx context.Context, id uuid.UUID) (session.Checkpoint, error) {
	c, err := scanCheckpoint(s.r.queryRow(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE id = $1`, id.String()))
	if err != nil {
		return c, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	return c, nil
}

func (s *store) ListCheckpoints(ctx context.Context, id uuid.UUID) ([]session.Checkpoint, error) {
	rs, err := s.r.query(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE session_id = $1 ORDER BY n`, id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s checkpoints: %w", id, err)
	}
	out, err := collect(rs, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("session %s checkpoints: %w", id, err)
	}
	return out, nil
}

// Changesets and reviews.

const changesetCols = `id, session_id, repo, target_branch, intent, status, base_commit, head_commit,
	accepted_commit, agent_id, created_at, updated_at, revision, read_set, selection, stats, accepting`

// readSetArg encodes a read set as JSON: path → hex blob id.
func readSetArg(rs map[string]gitstore.OID) (string, error) {
	if rs == nil {
		rs = map[string]gitstore.OID{}
	}
	return jsonArg(rs)
}

func (s *store) CreateChangeset(ctx context.Context, c changeset.Changeset) error {
	if c.Status == "" {
		c.Status = changeset.StatusOpen
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	reads, err := readSetArg(c.ReadSet)
	if err != nil {
		return err
	}
	sel, err := selectionArg(c.Selection)
	if err != nil {
		return err
	}
	stats, err := statsArg(c.Stats)
	if err != nil {
		return err
	}
	accepting, err := acceptingArg(c.Accepting)
	if err != nil {
		return err
	}
	_, err = s.r.exec(ctx, `INSERT INTO changesets (`+changesetCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		c.ID.String(), c.Session.String(), c.Repo, c.TargetBranch, c.Intent, string(c.Status),
		oidArg(c.BaseCommit), oidArg(c.HeadCommit), oidArg(c.AcceptedCommit), c.AgentID,
		timeArg(c.CreatedAt), timeArg(c.UpdatedAt), c.Revision, reads, sel, stats, accepting)
	if err != nil {
		return fmt.Errorf("create changeset %s: %w", c.ID, err)
	}
	return nil
}

func scanChangeset(sc scanner) (changeset.Changeset, error) {
	var (
		c      changeset.Changeset
		status string
		reads  string
		sel    string
		stats  string
		acc    string
	)
	err := sc.Scan(uuidCol{&c.ID}, uuidCol{&c.Session}, &c.Repo, &c.TargetBranch, &c.Intent, &status,
		oidCol{&c.BaseCommit}, oidCol{&c.HeadCommit}, oidCol{&c.AcceptedCommit}, &c.AgentID,
		timeCol{&c.CreatedAt}, timeCol{&c.UpdatedAt}, &c.Revision, textCol{&reads}, textCol{&sel}, textCol{&stats}, textCol{&acc})
	c.Status = changeset.Status(status)
	if err == nil && reads != "" && reads != "{}" {
		if err := json.Unmarshal([]byte(reads), &c.ReadSet); err != nil {
			return c, fmt.Errorf("db: changeset %s read set: %w", c.ID, err)
		}
	}
	if err == nil && sel != "" {
		c.Selection = &changeset.AcceptedSelection{}
		if err := json.Unmarshal([]byte(sel), c.Selection); err != nil {
			return c, fmt.Errorf("db: changeset %s selection: %w", c.ID, err)
		}
	}
	if err == nil && stats != "" {
		c.Stats = &merge.Stats{}
		if err := json.Unmarshal([]byte(stats), c.Stats); err != nil {
			return c, fmt.Errorf("db: changeset %s stats: %w", c.ID, err)
		}
	}
	if err == nil && acc != "" {
		c.Accepting = &changeset.Accepting{}
		if err := json.Unmarshal([]byte(acc), c.Accepting); err != nil {
			return c, fmt.Errorf("db: changeset %s accept in flight: %w", c.ID, err)
		}
	}
	return c, err
}

// acceptingArg encodes an accept in flight as JSON; "" for none.
func acceptingArg(a *changeset.Accepting) (string, error) {
	if a == nil {
		return "", nil
	}
	return jsonArg(a)
}

// statsArg encodes a revision's diff stats as JSON; "" for none.
func statsArg(st *merge.Stats) (string, error) {
	if st == nil {
		return "", nil
	}
	return jsonArg(st)
}

// selectionArg encodes a partial accept's selection as JSON; "" for none.
func selectionArg(sel *changeset.AcceptedSelection) (string, error) {
	if sel == nil {
		return "", nil
	}
	return jsonArg(sel)
}

func (s *store) SetChangesetSelection(ctx context.Context, id uuid.UUID, sel changeset.AcceptedSelection) error {
	arg, err := selectionArg(&sel)
	if err != nil {
		return err
	}
	n, err := s.r.exec(ctx, `UPDATE changesets SET selection = $2 WHERE id = $1`, id.String(), arg)
	if err != nil {
		return fmt.Errorf("changeset %s selection: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("changeset %s: %w", id, record.ErrNotFound)
	}
	return nil
}

func (s *store) ReviseChangeset(ctx context.Context, c changeset.Changeset, oldHead gitstore.OID) error {
	reads, err := readSetArg(c.ReadSet)
	if err != nil {
		return err
	}
	stats, err := statsArg(c.Stats)
	if err != nil {
		return err
	}
	n, err := s.r.exec(ctx, `UPDATE changesets SET head_commit = $3, base_commit = $4, intent = $5,
		target_branch = $6, revision = $7, read_set = $8, status = $9, updated_at = $10, stats = $11
		WHERE id = $1 AND COALESCE(head_commit, '') = $2 AND status NOT IN ('accepted', 'undone') AND accepting = ''`,
		c.ID.String(), oidText(oldHead), oidArg(c.HeadCommit), oidArg(c.BaseCommit), c.Intent,
		c.TargetBranch, c.Revision, reads, string(c.Status), timeArg(c.UpdatedAt), stats)
	if err != nil {
		return fmt.Errorf("revise changeset %s: %w", c.ID, err)
	}
	if n == 0 {
		cur, err := s.GetChangeset(ctx, c.ID)
		if err != nil {
			return err
		}
		current := oidText(cur.HeadCommit)
		if cur.Status == changeset.StatusAccepted || cur.Status == changeset.StatusUndone {
			return fmt.Errorf("revise changeset %s: it is %s: %w", c.ID, cur.Status,
				&record.ConflictError{Field: "status", Current: string(cur.Status)})
		}
		if cur.Accepting != nil {
			return fmt.Errorf("revise changeset %s: an accept of it is in flight: %w", c.ID,
				&record.ConflictError{Field: "accepting", Current: cur.Accepting.Commit.String()})
		}
		return fmt.Errorf("revise changeset %s: %w", c.ID, &record.ConflictError{Field: "head", Current: current})
	}
	return nil
}

func (s *store) BeginAccept(ctx context.Context, id uuid.UUID, a changeset.Accepting) error {
	arg, err := acceptingArg(&a)
	if err != nil {
		return err
	}
	n, err := s.r.exec(ctx, `UPDATE changesets SET accepting = $3
		WHERE id = $1 AND revision = $2 AND status NOT IN ('accepted', 'undone') AND accepting = ''`,
		id.String(), a.Revision, arg)
	if err != nil {
		return fmt.Errorf("changeset %s accept in flight: %w", id, err)
	}
	if n > 0 {
		return nil
	}
	cur, err := s.GetChangeset(ctx, id)
	if err != nil {
		return err
	}
	var ce *record.ConflictError
	switch {
	case cur.Status == changeset.StatusAccepted || cur.Status == changeset.StatusUndone:
		ce = &record.ConflictError{Field: "status", Current: string(cur.Status)}
	case cur.Revision != a.Revision:
		ce = &record.ConflictError{Field: "revision", Current: strconv.Itoa(cur.Revision)}
	case cur.Accepting != nil:
		ce = &record.ConflictError{Field: "accepting", Current: cur.Accepting.Commit.String()}
	default:
		ce = &record.ConflictError{Field: "status", Current: string(cur.Status)}
	}
	return fmt.Errorf("changeset %s accept in flight: %w", id, ce)
}

func (s *store) ClearAccepting(ctx context.Context, id uuid.UUID) error {
	if _, err := s.r.exec(ctx, `UPDATE changesets SET accepting = '' WHERE id = $1 AND accepting <> ''`, id.String()); err != nil {
		return fmt.Errorf("changeset %s accept in flight: %w", id, err)
	}
	return nil
}

func (s *store) GetChangeset(ctx context.Context, id uuid.UUID) (changeset.Changeset, error) {
	c, err := scanChangeset(s.r.queryRow(ctx, `SELECT `+changesetCols+` FROM changesets WHERE id = $1`, id.String()))
	if err != nil {
		return c, fmt.Errorf("changeset %s: %w", id, err)
	}
	return c, nil
}

func (s *store) ListChangesets(ctx context.Context, f changeset.Filter) ([]changeset.Changeset, error) {
	var w filter
	if f.Repo != "" {
		w.add("repo = ?", f.Repo)
	}
	if f.Status != "" {
		w.add("status = ?", string(f.Status))
	}
	if f.Session != uuid.Nil {
		w.add("session_id = ?", f.Session.String())
	}
	if f.Accepting {
		w.add("accepting <> ?", "")
	}
	q := `SELECT ` + changesetCols + ` FROM changesets` + w.where() + ` ORDER BY created_at, id` + w.limit(f.Limit)
	rs, err := s.r.query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list changesets: %w", err)
	}
	out, err := collect(rs, scanChangeset)
	if err != nil {
		return nil, fmt.Errorf("list changesets: %w", err)
	}
	return out, nil
}

func (s *store) SetChangesetStatus(ctx context.Context, id uuid.UUID, from, to changeset.Status, accepted gitstore.OID, at time.Time) error {
	n, err := s.r.exec(ctx, `UPDATE changesets SET status = $3, updated_at = $4,
		accepted_commit = COALESCE($5, accepted_commit) WHERE id = $1 AND status = $2`,
		id.String(), string(from), string(to), timeArg(at), oidArg(accepted))
	if err != nil {
		return fmt.Errorf("changeset %s status: %w", id, err)
	}
	if n == 0 {
		c, err := s.GetChangeset(ctx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("changeset %s status %s to %s: %w", id, from, to,
			&record.ConflictError{Field: "status", Current: string(c.Status)})
	}
	return nil
}

func (s *store) AddReview(ctx context.Context, r changeset.Review) (changeset.Review, error) {
	if r.ID == uuid.Nil {
		r.ID = uuid.New()
	}
	err := s.atomic(ctx, func(t *store) error {
		_, err := t.r.exec(ctx, `INSERT INTO reviews (id, changeset_id, verdict, body, author, author_kind, created_at, revision)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.ID.String(), r.Changeset.String(), string(r.Verdict), r.Body, r.Author, string(r.AuthorKind), timeArg(r.CreatedAt), r.Revision)
		if err != nil {
			return fmt.Errorf("changeset %s review: %w", r.Changeset, err)
		}
		for i, c := range r.Comments {
			_, err := t.r.exec(ctx, `INSERT INTO review_comments (review_id, ord, path, line, body)
				VALUES ($1, $2, $3, $4, $5)`, r.ID.String(), i, c.Path, c.Line, c.Body)
			if err != nil {
				return fmt.Errorf("changeset %s review comment: %w", r.Changeset, err)
			}
		}
		return nil
	})
	if err != nil {
		return changeset.Review{}, err
	}
	r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Microsecond)
	return r, nil
}

func (s *store) ListReviews(ctx context.Context, cs uuid.UUID) ([]changeset.Review, error) {
	rs, err := s.r.query(ctx, `SELECT id, changeset_id, verdict, body, author, author_kind, created_at, revision
		FROM reviews WHERE changeset_id = $1 ORDER BY created_at, id`, cs.String())
	if err != nil {
		return nil, fmt.Errorf("changeset %s reviews: %w", cs, err)
	}
	reviews, err := collect(rs, func(sc scanner) (changeset.Review, error) {
		var (
			r             changeset.Review
			verdict, kind string
		)
		err := sc.Scan(uuidCol{&r.ID}, uuidCol{&r.Changeset}, &verdict, &r.Body, &r.Author, &kind, timeCol{&r.CreatedAt}, &r.Revision)
		r.Verdict, r.AuthorKind = changeset.Verdict(verdict), changeset.ReviewerKind(kind)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("changeset %s reviews: %w", cs, err)
	}
	if len(reviews) == 0 {
		return nil, nil
	}
	byID := make(map[uuid.UUID]*changeset.Review, len(reviews))
	for i := range reviews {
		byID[reviews[i].ID] = &reviews[i]
	}
	rs, err = s.r.query(ctx, `SELECT c.review_id, c.path, c.line, c.body
		FROM review_comments c JOIN reviews r ON r.id = c.review_id
		WHERE r.changeset_id = $1 ORDER BY c.review_id, c.ord`, cs.String())
	if err != nil {
		return nil, fmt.Errorf("changeset %s review comments: %w", cs, err)
	}
	defer rs.Close()
	for rs.Next() {
		var (
			id uuid.UUID
			c  changeset.LineComment
		)
		if err := rs.Scan(uuidCol{&id}, &c.Path, &c.Line, &c.Body); err != nil {
			return nil, fmt.Errorf("changeset %s review comments: %w", cs, err)
		}
		if r := byID[id]; r != nil {
			r.Comments = append(r.Comments, c)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("changeset %s review comments: %w", cs, err)
	}
	return reviews, nil
}

// Layers.

func (s *store) AddLayer(ctx context.Context, l changeset.Layer) (changeset.Layer, error) {
	if l.State == "" {
		l.State = changeset.LayerAccepted
	}
	err := s.r.queryRow(ctx, `INSERT INTO layers
		(repo, branch, changeset_id, commit_oid, state, revert_commit, accepted_at, undone_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		l.Repo, l.Branch, l.Changeset.String(), oidArg(l.Commit), string(l.State),
		oidArg(l.RevertCommit), timeArg(l.AcceptedAt), timeArg(l.UndoneAt)).Scan(&l.ID)
	if err != nil {
		return changeset.Layer{}, fmt.Errorf("add layer for changeset %s: %w", l.Changeset, err)
	}
	l.AcceptedAt = l.AcceptedAt.UTC().Truncate(time.Microsecond)
	if !l.UndoneAt.IsZero() {
		l.UndoneAt = l.UndoneAt.UTC().Truncate(time.Microsecond)
	}
	return l, nil
}

func (s *store) ListLayers(ctx context.Context, repo, branch string) ([]changeset.Layer, error) {
	rs, err := s.r.query(ctx, `SELECT id, repo, branch, changeset_id, commit_oid, state, revert_commit,
		accepted_at, undone_at, reverting FROM layers WHERE repo = $1 AND branch = $2 ORDER BY id DESC`, repo, branch)
	if err != nil {
		return nil, fmt.Errorf("layers of %s %s: %w", repo, branch, err)
	}
	out, err := collect(rs, func(sc scanner) (changeset.Layer, error) {
		var (
			l     changeset.Layer
			state string
		)
		err := sc.Scan(&l.ID, &l.Repo, &l.Branch, uuidCol{&l.Changeset}, oidCol{&l.Commit}, &state,
			oidCol{&l.RevertCommit}, timeCol{&l.AcceptedAt}, timeCol{&l.UndoneAt}, oidCol{&l.Reverting})
		l.State = changeset.LayerState(state)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("layers of %s %s: %w", repo, branch, err)
	}
	return out, nil
}

func (s *store) UndoLayer(ctx context.Context, cs uuid.UUID, revert gitstore.OID, at time.Time) error {
	n, err := s.r.exec(ctx, `UPDATE layers SET state = 'undone', revert_commit = $2, undone_at = $3, reverting = NULL
		WHERE changeset_id = $1 AND state = 'accepted'`, cs.String(), oidArg(revert), timeArg(at))
	if err != nil {
		return fmt.Errorf("undo layer %s: %w", cs, err)
	}
	if n == 0 {
		var state string
		err := s.r.queryRow(ctx, `SELECT state FROM layers WHERE changeset_id = $1`, cs.String()).Scan(&state)
		if err != nil {
			return fmt.Errorf("layer %s: %w", cs, err)
		}
		return fmt.Errorf("undo layer %s: %w", cs, &record.ConflictError{Field: "state", Current: state})
	}
	return nil
}

func (s *store) BeginUndo(ctx context.Context, cs uuid.UUID, revert gitstore.OID) error {
	n, err := s.r.exec(ctx, `UPDATE layers SET reverting = $2
		WHERE changeset_id = $1 AND state = 'accepted' AND reverting IS NULL`, cs.String(), oidArg(revert))
	if err != nil {
		return fmt.Errorf("layer %s undo in flight: %w", cs, err)
	}
	if n > 0 {
		return nil
	}
	var (
		state     string
		reverting gitstore.OID
	)
	err = s.r.queryRow(ctx, `SELECT state, reverting FROM layers WHERE changeset_id = $1`, cs.String()).Scan(&state, oidCol{&reverting})
	if err != nil {
		return fmt.Errorf("layer %s: %w", cs, err)
	}
	ce := &record.ConflictError{Field: "state", Current: state}
	if state == string(changeset.LayerAccepted) && !reverting.IsZero() {
		ce = &record.ConflictError{Field: "reverting", Current: reverting.String()}
	}
	return fmt.Errorf("layer %s undo in flight: %w", cs, ce)
}

func (s *store) ClearReverting(ctx context.Context, cs uuid.UUID) error {
	if _, err := s.r.exec(ctx, `UPDATE layers SET reverting = NULL WHERE changeset_id = $1 AND reverting IS NOT NULL`, cs.String()); err != nil {
		return fmt.Errorf("layer %s undo in flight: %w", cs, err)
	}
	return nil
}

func (s *store) InFlight(ctx context.Context) ([]changeset.BranchName, error) {
	rs, err := s.r.query(ctx, `SELECT repo, target_branch FROM changesets WHERE accepting <> ''
		UNION SELECT repo, branch FROM layers WHERE reverting IS NOT NULL ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("branches in flight: %w", err)
	}
	out, err := collect(rs, func(sc scanner) (changeset.BranchName, error) {
		var b changeset.BranchName
		err := sc.Scan(&b.Repo, &b.Branch)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("branches in flight: %w", err)
	}
	return out, nil
}

// Repository policies.

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The column allow_checked_out holds the negation of RefuseCheckedOut, so
// a row written when allowing meant moving the branch without touching
// the work tree keeps its answer (1: go through, now updating the work
// tree; 0: refuse).
func (s *store) SetRepoPolicy(ctx context.Context, p repos.Policy) error {
	ex, err := json.Marshal(p.Exec)
	if err != nil {
		return fmt.Errorf("policy of repository %q: %w", p.Repo, err)
	}
	req := p.RequiredChecks
	if req == nil {
		req = [][]string{}
	}
	rc, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("policy of repository %q: %w", p.Repo, err)
	}
	_, err = s.r.exec(ctx, `INSERT INTO repo_policies (repo, required_approvals, allow_checked_out, refuse_stale_reads, exec, required_checks)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (repo) DO UPDATE SET required_approvals = excluded.required_approvals,
		allow_checked_out = excluded.allow_checked_out, refuse_stale_reads = excluded.refuse_stale_reads, exec = excluded.exec,
		required_checks = excluded.required_checks`,
		p.Repo, p.RequiredApprovals, boolInt(!p.RefuseCheckedOut), boolInt(p.RefuseStaleReads), string(ex), string(rc))
	if err != nil {
		return fmt.Errorf("policy of repository %q: %w", p.Repo, err)
	}
	return nil
}

func (s *store) GetRepoPolicy(ctx context.Context, repo string) (repos.Policy, error) {
	p := repos.Policy{Repo: repo}
	var allow, refuse int
	var ex, rc string
	err := s.r.queryRow(ctx, `SELECT required_approvals, allow_checked_out, refuse_stale_reads, exec, required_checks
		FROM repo_policies WHERE repo = $1`, repo).Scan(&p.RequiredApprovals, &allow, &refuse, &ex, &rc)
	if err != nil {
		return repos.Policy{}, fmt.Errorf("policy of repository %q: %w", repo, err)
	}
	p.RefuseCheckedOut, p.RefuseStaleReads = allow == 0, refuse != 0
	if err := json.Unmarshal([]byte(ex), &p.Exec); err != nil {
		return repos.Policy{}, fmt.Errorf("policy of repository %q: exec: %w", repo, err)
	}
	if err := json.Unmarshal([]byte(rc), &p.RequiredChecks); err != nil {
		return repos.Policy{}, fmt.Errorf("policy of repository %q: required_checks: %w", repo, err)
	}
	if len(p.RequiredChecks) == 0 {
		p.RequiredChecks = nil
	}
	return p, nil
}

// Environments.

// envArg is a map of variables as the JSON object stored ({} for none).
func envArg[V any](m map[string]V) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	return jsonArg(m)
}

// SetRepoEnvironment creates or replaces a repository's environment. The
// secrets arrive sealed (package secret) and are stored as they are.
func (s *store) SetRepoEnvironment(ctx context.Context, e repos.Environment) error {
	env, err := envArg(e.Env)
	if err != nil {
		return fmt.Errorf("environment of repository %q: %w", e.Repo, err)
	}
	sec, err := envArg(e.Secrets) // []byte values encode as base64
	if err != nil {
		return fmt.Errorf("environment of repository %q: %w", e.Repo, err)
	}
	cfg := ""
	if e.Config != nil {
		if cfg, err = jsonArg(e.Config); err != nil {
			return fmt.Errorf("environment of repository %q: %w", e.Repo, err)
		}
	}
	_, err = s.r.exec(ctx, `INSERT INTO repo_environments (repo, env, secrets, config) VALUES ($1, $2, $3, $4)
		ON CONFLICT (repo) DO UPDATE SET env = excluded.env, secrets = excluded.secrets, config = excluded.config`, e.Repo, env, sec, cfg)
	if err != nil {
		return fmt.Errorf("environment of repository %q: %w", e.Repo, err)
	}
	return nil
}

// GetRepoEnvironment returns a repository's environment; ErrNotFound when
// none was set.
func (s *store) GetRepoEnvironment(ctx context.Context, repo string) (repos.Environment, error) {
	e := repos.Environment{Repo: repo}
	var env, sec, cfg string
	err := s.r.queryRow(ctx, `SELECT env, secrets, config FROM repo_environments WHERE repo = $1`, repo).Scan(&env, &sec, &cfg)
	if err != nil {
		return repos.Environment{}, fmt.Errorf("environment of repository %q: %w", repo, err)
	}
	if err := json.Unmarshal([]byte(env), &e.Env); err != nil {
		return repos.Environment{}, fmt.Errorf("environment of repository %q: env: %w", repo, err)
	}
	if err := json.Unmarshal([]byte(sec), &e.Secrets); err != nil {
		return repos.Environment{}, fmt.Errorf("environment of repository %q: secrets: %w", repo, err)
	}
	if cfg != "" {
		e.Config = new(environment.Config)
		if err := json.Unmarshal([]byte(cfg), e.Config); err != nil {
			return repos.Environment{}, fmt.Errorf("environment of repository %q: config: %w", repo, err)
		}
	}
	if len(e.Env) == 0 {
		e.Env = nil
	}
	if len(e.Secrets) == 0 {
		e.Secrets = nil
	}
	return e, nil
}

// Runs.

func (s *store) AddRun(ctx context.Context, r changeset.Run) (changeset.Run, error) {
	argv, err := jsonArg(r.Argv)
	if err != nil {
		return r, err
	}
	err = s.r.queryRow(ctx, `INSERT INTO runs (session_id, argv, exit_code, duration_ms, at, seq, changed, output_tail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		r.Session.String(), argv, r.ExitCode, r.Duration.Milliseconds(), timeArg(r.At), r.Seq, boolInt(r.Changed), r.OutputTail).Scan(&r.ID)
	if err != nil {
		return r, fmt.Errorf("session %s run: %w", r.Session, err)
	}
	return r, nil
}

func (s *store) ListRuns(ctx context.Context, session uuid.UUID) ([]changeset.Run, error) {
	rs, err := s.r.query(ctx, `SELECT id, session_id, argv, exit_code, duration_ms, at, seq, changed, output_tail
		FROM runs WHERE session_id = $1 ORDER BY id`, session.String())
	if err != nil {
		return nil, fmt.Errorf("session %s runs: %w", session, err)
	}
	out, err := collect(rs, func(sc scanner) (changeset.Run, error) {
		var (
			r       changeset.Run
			argv    string
			ms      int64
			changed int
		)
		if err := sc.Scan(&r.ID, uuidCol{&r.Session}, textCol{&argv}, &r.ExitCode, &ms, timeCol{&r.At}, &r.Seq, &changed, &r.OutputTail); err != nil {
			return r, err
		}
		r.Duration, r.Changed = time.Duration(ms)*time.Millisecond, changed != 0
		if err := json.Unmarshal([]byte(argv), &r.Argv); err != nil {
			return r, fmt.Errorf("db: run %d: %w", r.ID, err)
		}
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("session %s runs: %w", session, err)
	}
	return out, nil
}

func (s *store) CheckpointSeq(ctx context.Context, session uuid.UUID, commit gitstore.OID) (int64, error) {
	var seq int64
	err := s.r.queryRow(ctx, `SELECT seq FROM checkpoints WHERE session_id = $1 AND commit_oid = $2 ORDER BY n DESC LIMIT 1`,
		session.String(), commit.String()).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("session %s checkpoint %s: %w", session, commit, err)
	}
	return seq, nil
}

// Events.

func (s *store) AppendEvent(ctx context.Context, e events.Event) (events.Event, error) {
	if len(e.Payload) == 0 {
		e.Payload = json.RawMessage("{}")
	}
	if !json.Valid(e.Payload) {
		return events.Event{}, fmt.Errorf("append event %s: payload is not JSON", e.Type)
	}
	err := s.atomic(ctx, func(t *store) error {
		err := t.r.queryRow(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'events' RETURNING value`).Scan(&e.ID)
		if err != nil {
			return fmt.Errorf("append event %s: %w", e.Type, err)
		}
		_, err = t.r.exec(ctx, `INSERT INTO events (id, repo, session_id, type, payload, at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			e.ID, e.Repo, uuidArg(e.Session), e.Type, string(e.Payload), timeArg(e.At))
		if err != nil {
			return fmt.Errorf("append event %s: %w", e.Type, err)
		}
		return nil
	})
	if err != nil {
		return events.Event{}, err
	}
	e.At = e.At.UTC().Truncate(time.Microsecond)
	return e, nil
}

// LastEventID reads the counter the ids come from: the newest event's id
// once its transaction committed (the counter's row is locked until then).
func (s *store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.r.queryRow(ctx, `SELECT value FROM counters WHERE name = 'events'`).Scan(&id); err != nil {
		return 0, fmt.Errorf("last event id: %w", err)
	}
	return id, nil
}

func (s *store) ListEvents(ctx context.Context, f events.Filter) ([]events.Event, error) {
	var w filter
	if f.Session != uuid.Nil {
		w.add("session_id = ?", f.Session.String())
	} else {
		w.add("repo = ?", f.Repo)
	}
	w.add("id > ?", f.After)
	w.in("type", f.Types)
	q := `SELECT id, repo, session_id, type, payload, at FROM events` + w.where() + ` ORDER BY id` + w.limit(f.Limit)
	rs, err := s.r.query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := collect(rs, func(sc scanner) (events.Event, error) {
		var (
			e       events.Event
			payload string
		)
		err := sc.Scan(&e.ID, &e.Repo, uuidCol{&e.Session}, &e.Type, textCol{&payload}, timeCol{&e.At})
		e.Payload = json.RawMessage(payload)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// Store is a database as the engines use it: package session's Store,
// the registry's (repos.Store), the event log's (events.Store), and
// package changeset's over the same database (Changesets).
type Store interface {
	session.Store
	repos.Store
	events.Store
	Changesets() changeset.Store
	// CheckSpace probes whether the database takes writes again after one
	// failed for lack of space: nil, or a *record.NoSpaceError while it
	// does not.
	CheckSpace(ctx context.Context) error
}

// probeWrite commits a write transaction that changes nothing: the events
// counter set to itself.
func (s *store) probeWrite(ctx context.Context) error {
	err := s.atomic(ctx, func(t *store) error {
		_, err := t.r.exec(ctx, `UPDATE counters SET value = value WHERE name = 'events'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("probe space: %w", err)
	}
	return nil
}

// changesets is the store as package changeset's Store: the same methods,
// with InTx handing out changeset.Tx.
type changesets struct{ *store }

func (c changesets) InTx(ctx context.Context, fn func(changeset.Tx) error) error {
	return c.atomic(ctx, func(t *store) error { return fn(t) })
}

// Changesets is the changeset store over the same database; its
// transactions are the database's, so a changeset and its session change
// at once.
func (s *store) Changesets() changeset.Store { return changesets{s} }

// Open opens the Postgres store when databaseURL is set and otherwise the
// embedded store in dataDir, as `sessiond serve` does.
func Open(ctx context.Context, databaseURL, dataDir string) (Store, error) {
	if databaseURL != "" {
		return OpenPostgres(ctx, databaseURL)
	}
	return OpenSQLiteDir(ctx, dataDir)
}

// Kept conflicts and remembered resolutions (issue 23).

func (s *store) PutConflicts(ctx context.Context, id uuid.UUID, cs []session.KeptConflict) error {
	return s.atomic(ctx, func(t *store) error {
		if _, err := t.r.exec(ctx, `DELETE FROM session_conflicts WHERE session_id = $1`, id.String()); err != nil {
			return fmt.Errorf("session %s conflicts: %w", id, err)
		}
		for _, c := range cs {
			d, err := jsonArg(c)
			if err != nil {
				return err
			}
			if _, err := t.r.exec(ctx, `INSERT INTO session_conflicts (session_id, path, detail) VALUES ($1, $2, $3)`,
				id.String(), c.Path, d); err != nil {
				return fmt.Errorf("session %s conflict %q: %w", id, c.Path, err)
			}
		}
		return nil
	})
}

func (s *store) ListConflicts(ctx context.Context, id uuid.UUID) ([]session.KeptConflict, error) {
	rs, err := s.r.query(ctx, `SELECT detail FROM session_conflicts WHERE session_id = $1 ORDER BY path`, id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s conflicts: %w", id, err)
	}
	out, err := collect(rs, func(sc scanner) (session.KeptConflict, error) {
		var d string
		var c session.KeptConflict
		if err := sc.Scan(&d); err != nil {
			return c, err
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			return c, fmt.Errorf("conflict detail: %w", err)
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("session %s conflicts: %w", id, err)
	}
	return out, nil
}

func (s *store) DeleteConflicts(ctx context.Context, id uuid.UUID, paths []string) error {
	for _, p := range paths {
		if _, err := s.r.exec(ctx, `DELETE FROM session_conflicts WHERE session_id = $1 AND path = $2`, id.String(), p); err != nil {
			return fmt.Errorf("session %s conflict %q: %w", id, p, err)
		}
	}
	return nil
}

func (s *store) PutResolution(ctx context.Context, r session.Resolution) error {
	_, err := s.r.exec(ctx, `INSERT INTO rerere_resolutions (repo, id, preimage, postimage, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (repo, id) DO UPDATE SET preimage = excluded.preimage, postimage = excluded.postimage, created_at = excluded.created_at`,
		r.Repo, r.ID, nonNil(r.Preimage), nonNil(r.Postimage), timeArg(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("repository %s resolution %s: %w", r.Repo, r.ID, err)
	}
	return nil
}

func (s *store) GetResolution(ctx context.Context, repo, id string) (session.Resolution, error) {
	r := session.Resolution{Repo: repo, ID: id}
	err := s.r.queryRow(ctx, `SELECT preimage, postimage, created_at FROM rerere_resolutions WHERE repo = $1 AND id = $2`, repo, id).
		Scan(&r.Preimage, &r.Postimage, timeCol{&r.CreatedAt})
	if err != nil {
		return session.Resolution{}, fmt.Errorf("repository %s resolution %s: %w", repo, id, err)
	}
	r.Preimage, r.Postimage = nonNil(r.Preimage), nonNil(r.Postimage)
	return r, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
