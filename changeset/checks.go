package changeset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Run is one command a session ran (every exec, whether it changed files
// or not), kept for the checks of its changesets.
type Run struct {
	ID       int64
	Session  uuid.UUID
	Argv     []string
	ExitCode int
	Duration time.Duration
	// At is when the command finished.
	At time.Time
	// Seq is the session's latest mutation when the command finished, its
	// own exec mutation included: the state of the files it leaves.
	Seq int64
	// Changed says the command changed files that were recorded.
	Changed bool
	// OutputTail is the end of its output: the last OutputTailBytes of
	// stdout, then the last OutputTailBytes of stderr.
	OutputTail string
}

// OutputTailBytes is how much of each stream a Run keeps.
const OutputTailBytes = 2048

// CheckState is what the newest run of a command says of a revision.
type CheckState string

// Check states: passed and failed are runs on exactly the revision's
// files; stale is a run after which the files changed before the
// revision; missing is a required check with no run at all.
const (
	CheckPassed  CheckState = "passed"
	CheckFailed  CheckState = "failed"
	CheckStale   CheckState = "stale"
	CheckMissing CheckState = "missing"
	// CheckNone is the State of Checks with no check at all.
	CheckNone CheckState = "none"
)

// Check is the newest run of one distinct argv on a revision, or a
// required check's absence (State missing, Run holding only Argv).
type Check struct {
	Run
	State    CheckState
	Required bool
}

// Checks are the checks of one revision of a changeset, newest run first,
// then the missing required ones.
type Checks struct {
	Changeset uuid.UUID
	Revision  int
	Head      gitstore.OID
	// Checks is empty, never nil, when the session ran nothing.
	Checks []Check
}

// State sums the checks up as a badge does: failed when one failed, else
// missing when a required one never ran, else stale when one is, else
// passed; none when there are none.
func (cs Checks) State() CheckState {
	if len(cs.Checks) == 0 {
		return CheckNone
	}
	has := map[CheckState]bool{}
	for _, c := range cs.Checks {
		has[c.State] = true
	}
	for _, st := range []CheckState{CheckFailed, CheckMissing, CheckStale} {
		if has[st] {
			return st
		}
	}
	return CheckPassed
}

// RunInput is a finished command as the API hands it over.
type RunInput struct {
	Session        uuid.UUID
	Argv           []string
	ExitCode       int
	Duration       time.Duration
	Seq            int64
	Changed        bool
	Stdout, Stderr []byte
}

// RecordRun keeps a command a session ran, for the checks of its
// changesets.
func (s *Service) RecordRun(ctx context.Context, in RunInput) error {
	if len(in.Argv) == 0 {
		return fmt.Errorf("%w: a run needs an argv", record.ErrInvalid)
	}
	tail := tailText(in.Stdout)
	if e := tailText(in.Stderr); e != "" {
		if tail != "" && !strings.HasSuffix(tail, "\n") {
			tail += "\n"
		}
		tail += e
	}
	_, err := s.store.AddRun(ctx, Run{
		Session: in.Session, Argv: in.Argv, ExitCode: in.ExitCode, Duration: in.Duration,
		At: s.now().UTC(), Seq: in.Seq, Changed: in.Changed, OutputTail: tail,
	})
	return err
}

// tailText is the last OutputTailBytes of p as text a database keeps: cut
// at a character boundary, invalid UTF-8 and NUL replaced.
func tailText(p []byte) string {
	if len(p) > OutputTailBytes {
		p = p[len(p)-OutputTailBytes:]
		for len(p) > 0 && !utf8.RuneStart(p[0]) {
			p = p[1:]
		}
	}
	return strings.ReplaceAll(strings.ToValidUTF8(string(p), "\uFFFD"), "\x00", "\uFFFD")
}

// Checks returns the checks of revision n of a changeset (0: the
// current one): the commands its session ran up to that revision's files,
// newest per distinct argv, each passed, failed or stale (the files
// changed after it), and the repository's required checks that never
// ran, as missing.
func (s *Service) Checks(ctx context.Context, id uuid.UUID, n int) (Checks, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Checks{}, err
	}
	if n != 0 && n != c.Revision {
		revs, err := s.revisions(ctx, c)
		if err != nil {
			return Checks{}, err
		}
		found := false
		for _, r := range revs {
			if r.N == n {
				c.HeadCommit, c.Revision, found = r.Head, r.N, true
			}
		}
		if !found {
			return Checks{}, fmt.Errorf("changeset %s has no revision %d: %w", id, n, record.ErrNotFound)
		}
	}
	pol, err := s.repos.Policy(ctx, c.Repo)
	if err != nil {
		return Checks{}, err
	}
	return s.checks(ctx, c, pol.RequiredChecks)
}

func (s *Service) checks(ctx context.Context, c Changeset, required [][]string) (Checks, error) {
	out := Checks{Changeset: c.ID, Revision: c.Revision, Head: c.HeadCommit, Checks: []Check{}}
	// The revision's files are the session's at the seq of the checkpoint
	// its head is; a head that is no checkpoint of the session (none
	// known) makes every run stale.
	seq, err := s.store.CheckpointSeq(ctx, c.Session, c.HeadCommit)
	switch {
	case errors.Is(err, record.ErrNotFound):
		seq = -1
	case err != nil:
		return Checks{}, fmt.Errorf("changeset %s checks: %w", c.ID, err)
	}
	runs, err := s.store.ListRuns(ctx, c.Session)
	if err != nil {
		return Checks{}, fmt.Errorf("changeset %s checks: %w", c.ID, err)
	}
	seen := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		key := argvKey(r.Argv)
		// A run after the revision's files ran on files it does not
		// have; it belongs to a later revision.
		if (seq >= 0 && r.Seq > seq) || seen[key] {
			continue
		}
		seen[key] = true
		ch := Check{Run: r, State: CheckPassed}
		switch {
		case r.Seq != seq:
			ch.State = CheckStale
		case r.ExitCode != 0:
			ch.State = CheckFailed
		}
		ch.Required = slices.ContainsFunc(required, func(a []string) bool { return argvKey(a) == key })
		out.Checks = append(out.Checks, ch)
	}
	for _, a := range required {
		if !seen[argvKey(a)] {
			seen[argvKey(a)] = true
			out.Checks = append(out.Checks, Check{Run: Run{Session: c.Session, Argv: a}, State: CheckMissing, Required: true})
		}
	}
	return out, nil
}

// requireChecks refuses an accept of c's current revision when a check
// the policy requires does not pass on it.
func (s *Service) requireChecks(ctx context.Context, c Changeset, required [][]string) error {
	if len(required) == 0 {
		return nil
	}
	cs, err := s.checks(ctx, c, required)
	if err != nil {
		return err
	}
	byArgv := map[string]Check{}
	for _, ch := range cs.Checks {
		byArgv[argvKey(ch.Argv)] = ch
	}
	var bad []Check
	for _, a := range required {
		if ch := byArgv[argvKey(a)]; ch.State != CheckPassed {
			bad = append(bad, ch)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &ChecksRequiredError{Changeset: c.ID, Revision: c.Revision, Checks: bad}
}

// argvKey is an argv as one comparable string; NUL cannot occur in an
// argument.
func argvKey(argv []string) string { return strings.Join(argv, "\x00") }

// Runs returns the commands a session ran, oldest first, each with its
// exit code and the end of its output: the session page's record of
// commands, including those that changed no file (which the mutation log
// does not keep). ErrNotFound when there is no such session.
func (s *Service) Runs(ctx context.Context, session uuid.UUID) ([]Run, error) {
	if _, err := s.sessions.SessionInfo(ctx, session); err != nil {
		return nil, err
	}
	runs, err := s.store.ListRuns(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("session %s runs: %w", session, err)
	}
	if runs == nil {
		runs = []Run{}
	}
	return runs, nil
}
