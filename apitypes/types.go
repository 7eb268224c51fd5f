package apitypes

import (
	"bytes"
	"encoding/json"
	"time"
)

// Repo is a registered repository.
type Repo struct {
	Name string `json:"name"`
	// Path is where the repository is on the node answering: for one with
	// an Origin, that node's own clone.
	Path string `json:"path"`
	// Origin is the git URL the repository comes from and accepts go to;
	// omitted for a local repository.
	Origin    string    `json:"origin,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateRepoRequest registers an existing repository (Path), one at a git
// remote (Origin: each node clones it, accepts are pushed to it) or
// creates a bare one under the data directory (Init).
type CreateRepoRequest struct {
	Name   string `json:"name"`
	Path   string `json:"path,omitempty"`
	Origin string `json:"origin,omitempty"`
	Init   bool   `json:"init,omitempty"`
}

// Branch is a branch and its commit.
type Branch struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

// Policy is a session's path policy: globs the session may read and
// write, globs denied to it, and the policy of the session it was forked
// from, which narrows this one.
type Policy struct {
	Read   []string `json:"read,omitempty" sessiond:"path"`
	Write  []string `json:"write,omitempty" sessiond:"path"`
	Deny   []string `json:"deny,omitempty" sessiond:"path"`
	Parent *Policy  `json:"parent,omitempty"`
}

// Session is one agent's session. Token is set only in the answer to a
// create or a fork when auth is on.
type Session struct {
	ID         string `json:"id"`
	Repo       string `json:"repo"`
	Parent     string `json:"parent,omitempty"`
	AgentID    string `json:"agent_id"`
	AgentName  string `json:"agent_name"`
	Intent     string `json:"intent"`
	BaseCommit string `json:"base_commit"`
	BaseRef    string `json:"base_ref,omitempty"`
	Mode       string `json:"mode"`
	State      string `json:"state"`
	Policy     Policy `json:"policy"`
	// Caches is "private" for a session whose commands get tool caches
	// of their own, else "shared".
	Caches string `json:"caches"`
	// Env are the session's own plain variables, given at creation.
	Env          map[string]string `json:"env,omitempty"`
	Head         string            `json:"head"`
	Seq          int64             `json:"seq"`
	Checkpoints  int               `json:"checkpoints"`
	CreatedAt    time.Time         `json:"created_at"`
	LastActiveAt time.Time         `json:"last_active_at"`
	ExpiresAt    *time.Time        `json:"expires_at,omitempty"`
	Token        string            `json:"token,omitempty"`
	// Environment is set in the answer to a create with prepare: the
	// environment layer built ahead of the first command.
	Environment *ExecEnvironment `json:"environment,omitempty"`
}

// CreateSessionRequest starts a session.
type CreateSessionRequest struct {
	Repo       string  `json:"repo"`
	Base       string  `json:"base,omitempty"`
	AgentID    string  `json:"agent_id,omitempty"`
	AgentName  string  `json:"agent_name,omitempty"`
	Intent     string  `json:"intent,omitempty"`
	Mode       string  `json:"mode,omitempty"`
	TTLSeconds int64   `json:"ttl_seconds,omitempty"`
	Policy     *Policy `json:"policy,omitempty"`
	// Caches is shared (the default) or private: every command of the
	// session gets tool caches of its own.
	Caches string `json:"caches,omitempty"`
	// Env are the session's own plain variables: every command gets
	// them, over the repository's (a request's own win over both).
	Env map[string]string `json:"env,omitempty"`
	// Prepare builds the repository's environment layer before the
	// answer, so the first command does not wait for it.
	Prepare bool `json:"prepare,omitempty"`
}

// ForkRequest forks a session from its current view or a checkpoint.
type ForkRequest struct {
	AgentID    string  `json:"agent_id,omitempty"`
	AgentName  string  `json:"agent_name,omitempty"`
	Intent     string  `json:"intent,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	Mode       string  `json:"mode,omitempty"`
	Policy     *Policy `json:"policy,omitempty"`
}

// Sessions is a list of sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// FileInfo describes one path of a session's view.
type FileInfo struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Mode   string `json:"mode"`
	OID    string `json:"oid"`
	Size   int64  `json:"size"`
	Status string `json:"status"`
	Source string `json:"source,omitempty"`
}

// WriteResult answers a file write or delete.
type WriteResult struct {
	File     *FileInfo `json:"file,omitempty"`
	Mutation Mutation  `json:"mutation"`
}

// Tree is a listing.
type Tree struct {
	Entries []FileInfo `json:"entries"`
}

// The ops of an Edit.
const (
	OpWrite   = "write"
	OpAppend  = "append"
	OpDelete  = "delete"
	OpMove    = "move"
	OpCopy    = "copy"
	OpReplace = "replace"
)

// Edit is one step of a batch: ops write, append, delete, move, copy,
// replace.
type Edit struct {
	Op        string `json:"op"`
	Path      string `json:"path,omitempty" sessiond:"path"`
	To        string `json:"to,omitempty" sessiond:"path"`
	Content   string `json:"content,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
	Glob      string `json:"glob,omitempty" sessiond:"path"`
	Old       string `json:"old,omitempty"`
	New       string `json:"new,omitempty"`
	Count     int    `json:"count,omitempty"`
	IfMatch   string `json:"if_match,omitempty"`
	// Overwrite lets a move or copy replace a file at To.
	Overwrite bool `json:"overwrite,omitempty"`

	hasContent bool // content was in the JSON: a write needs it, "" for an empty file
}

// editJSON is Edit's wire form: content is a pointer, so that an absent
// content and an empty one differ.
type editJSON struct {
	Op        string  `json:"op"`
	Path      string  `json:"path,omitempty"`
	To        string  `json:"to,omitempty"`
	Content   *string `json:"content,omitempty"`
	Mode      string  `json:"mode,omitempty"`
	Recursive bool    `json:"recursive,omitempty"`
	Glob      string  `json:"glob,omitempty"`
	Old       string  `json:"old,omitempty"`
	New       string  `json:"new,omitempty"`
	Count     int     `json:"count,omitempty"`
	IfMatch   string  `json:"if_match,omitempty"`
	Overwrite bool    `json:"overwrite,omitempty"`
}

// UnmarshalJSON decodes an edit strictly (unknown fields are errors, as
// for every request body) and notes whether content was given.
func (e *Edit) UnmarshalJSON(b []byte) error {
	var w editJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*e = Edit{Op: w.Op, Path: w.Path, To: w.To, Mode: w.Mode, Recursive: w.Recursive, Glob: w.Glob,
		Old: w.Old, New: w.New, Count: w.Count, IfMatch: w.IfMatch, Overwrite: w.Overwrite, hasContent: w.Content != nil}
	if w.Content != nil {
		e.Content = *w.Content
	}
	return nil
}

// HasContent reports whether the edit's JSON carried content, empty or
// not: a write needs it, and "" writes an empty file.
func (e Edit) HasContent() bool { return e.hasContent }

// MarshalJSON sends content with every write and append, empty or not.
func (e Edit) MarshalJSON() ([]byte, error) {
	w := editJSON{Op: e.Op, Path: e.Path, To: e.To, Mode: e.Mode, Recursive: e.Recursive, Glob: e.Glob,
		Old: e.Old, New: e.New, Count: e.Count, IfMatch: e.IfMatch, Overwrite: e.Overwrite}
	if e.Content != "" || e.Op == OpWrite || e.Op == OpAppend {
		w.Content = &e.Content
	}
	return json.Marshal(w)
}

// EditsRequest is an atomic batch of edits.
type EditsRequest struct {
	DryRun bool   `json:"dry_run"`
	Edits  []Edit `json:"edits"`
	// Diff asks for the unified diff of what the batch changes (or, in a
	// dry run, would change) in EditsResult.Diff.
	Diff bool `json:"diff,omitempty"`
}

// EditResult is what one edit did.
type EditResult struct {
	Index        int      `json:"index"`
	Op           string   `json:"op"`
	Paths        []string `json:"paths"`
	Replacements int      `json:"replacements,omitempty"`
	// Skipped lists what a replace by glob matched and would have changed
	// but left alone: binary files and symlinks (rewrite them by naming
	// them in "path"), and base files whose names the write rules refuse.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Skipped is a file a replace by glob matched and did not touch, and why:
// "binary", "symlink" or "invalid_path" (with the rule the name breaks).
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Rule   string `json:"rule,omitempty"`
}

// FileChange is one file a batch changed.
type FileChange struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// EditsResult is what a batch did (or would do, in a dry run).
type EditsResult struct {
	DryRun  bool         `json:"dry_run"`
	Seq     int64        `json:"seq"`
	Results []EditResult `json:"results"`
	Changes []FileChange `json:"changes"`
	// Diff is the batch's unified diff, as the session's diff shows those
	// files, when the request asked for it.
	Diff string `json:"diff,omitempty"`
}

// SearchRequest is a content search.
type SearchRequest struct {
	Pattern         string `json:"pattern"`
	Glob            string `json:"glob,omitempty" sessiond:"path"`
	Prefix          string `json:"prefix,omitempty" sessiond:"path"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	MaxResults      int    `json:"max_results,omitempty"`
	// Context is how many lines around each match to return (0 to 100),
	// as grep -C.
	Context int `json:"context,omitempty"`
}

// SearchResult is the answer to a search.
type SearchResult struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated"`
}

// Match is one matching line. Before and After are its context lines
// that no other match of the file shows: Before ends at Line-1, After
// starts at Line+1 and stops before the next match, as grep -C prints
// them.
type Match struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Column int      `json:"column"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// Summary counts a session's files and changes.
type Summary struct {
	Files       int            `json:"files"`
	Directories int            `json:"directories"`
	Bytes       int64          `json:"bytes"`
	Added       int            `json:"added"`
	Modified    int            `json:"modified"`
	Deleted     int            `json:"deleted"`
	TopLevel    map[string]int `json:"top_level"` // files per top-level directory ("" for the root's own files)
	Extensions  map[string]int `json:"extensions"`
}

// Mutation is one entry of the mutation log.
type Mutation struct {
	Seq   int64     `json:"seq"`
	Op    string    `json:"op"`
	Paths []string  `json:"paths"`
	Old   []string  `json:"old"`
	New   []string  `json:"new"`
	Actor string    `json:"actor"`
	At    time.Time `json:"at"`
	// Exec is set for an exec mutation.
	Exec *Exec `json:"exec,omitempty"`
}

// Mutations is a page of the mutation log.
type Mutations struct {
	Mutations []Mutation `json:"mutations"`
}

// CheckpointRequest creates a checkpoint.
type CheckpointRequest struct {
	Label   string `json:"label,omitempty"`
	Message string `json:"message,omitempty"`
}

// Checkpoint is a commit of a session's view.
type Checkpoint struct {
	ID        string    `json:"id"`
	N         int       `json:"n"`
	Commit    string    `json:"commit"`
	Tree      string    `json:"tree"`
	Parent    string    `json:"parent"`
	Seq       int64     `json:"seq"`
	Ref       string    `json:"ref"`
	Label     string    `json:"label,omitempty"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
}

// Checkpoints lists a session's checkpoints.
type Checkpoints struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// RollbackRequest names the checkpoint to restore: its id, number,
// commit id or label, or "base" to undo all of the session's changes.
type RollbackRequest struct {
	Checkpoint string `json:"checkpoint"`
}

// RollbackResult is the rollback's mutation and the checkpoint marking its
// result.
type RollbackResult struct {
	Checkpoint Checkpoint `json:"checkpoint"`
	Mutation   Mutation   `json:"mutation"`
}

// Event is one event of the stream, as sent in an SSE data line.
type Event struct {
	ID      int64     `json:"id"`
	Type    string    `json:"type"`
	Repo    string    `json:"repo"`
	Session string    `json:"session,omitempty"`
	Payload any       `json:"payload"`
	At      time.Time `json:"at"`
}

// Events is a page of stored events (the events routes with Accept:
// application/json).
type Events struct {
	Events []Event `json:"events"`
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}
