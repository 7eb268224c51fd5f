package api

import (
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// Conversions from the engine's values to the wire types of package
// apitypes, and back for the few a request carries.

func oidText(o gitstore.OID) string {
	if o.IsZero() {
		return ""
	}
	return o.String()
}

func oidTexts(os []gitstore.OID) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = oidText(o)
	}
	return out
}

func toRepo(r repos.Repo) apitypes.Repo {
	return apitypes.Repo{Name: r.Name, Path: r.Path, Origin: r.Origin, CreatedAt: r.CreatedAt}
}

func toSession(s session.Session) apitypes.Session {
	out := apitypes.Session{
		ID: s.ID.String(), Repo: s.Repo, AgentID: s.AgentID, AgentName: s.AgentName, Intent: s.Intent,
		BaseCommit: oidText(s.BaseCommit), BaseRef: s.BaseRef, Mode: string(s.Mode), State: string(s.State),
		Policy: toPolicy(s.Policy), Head: oidText(s.Head), Seq: s.Seq, Checkpoints: s.Checkpoints,
		CreatedAt: s.CreatedAt, LastActiveAt: s.LastActiveAt, Caches: session.CachesShared,
	}
	if s.Caches == session.CachesPrivate {
		out.Caches = s.Caches
	}
	out.Env = s.Env
	if s.Parent != [16]byte{} {
		out.Parent = s.Parent.String()
	}
	if !s.ExpiresAt.IsZero() {
		t := s.ExpiresAt
		out.ExpiresAt = &t
	}
	return out
}

func toFileInfo(fi session.FileInfo) apitypes.FileInfo {
	return apitypes.FileInfo{Path: fi.Path, Type: fi.Type, Mode: fi.Mode.String(), OID: oidText(fi.OID),
		Size: fi.Size, Status: fi.Status.String(), Source: string(fi.Source)}
}

func toMutation(m session.MutationRecord) apitypes.Mutation {
	out := apitypes.Mutation{Seq: m.Seq, Op: string(m.Op), Paths: m.Paths, Old: oidTexts(m.Old), New: oidTexts(m.New), Actor: m.Actor, At: m.At}
	if out.Paths == nil {
		out.Paths = []string{}
	}
	if m.Exec != nil {
		out.Exec = &apitypes.Exec{Argv: m.Exec.Argv, ExitCode: m.Exec.ExitCode, DurationMS: m.Exec.DurationMS, Service: m.Exec.Service}
	}
	return out
}

func toCheckpoint(c session.Checkpoint) apitypes.Checkpoint {
	return apitypes.Checkpoint{
		ID: c.ID.String(), N: c.N, Commit: oidText(c.Commit), Tree: oidText(c.Tree), Parent: oidText(c.Parent),
		Seq: c.Seq, Ref: string(session.CheckpointRef(c.Session, c.N)),
		Label: c.Label, Message: c.Message, CreatedAt: c.CreatedAt,
	}
}

func toPolicy(p session.Policy) apitypes.Policy {
	out := apitypes.Policy{Read: p.Read, Write: p.Write, Deny: p.Deny}
	if p.Parent != nil {
		parent := toPolicy(*p.Parent)
		out.Parent = &parent
	}
	return out
}

func fromPolicy(p apitypes.Policy) session.Policy {
	out := session.Policy{Read: p.Read, Write: p.Write, Deny: p.Deny}
	if p.Parent != nil {
		parent := fromPolicy(*p.Parent)
		out.Parent = &parent
	}
	return out
}

func toEditResults(rs []session.EditResult) []apitypes.EditResult {
	out := make([]apitypes.EditResult, len(rs))
	for i, r := range rs {
		out[i] = apitypes.EditResult{Index: r.Index, Op: r.Op, Paths: r.Paths, Replacements: r.Replacements}
		for _, sk := range r.Skipped {
			out[i].Skipped = append(out[i].Skipped, apitypes.Skipped(sk))
		}
	}
	return out
}

func toSearchResult(r session.SearchResult) apitypes.SearchResult {
	out := apitypes.SearchResult{Truncated: r.Truncated}
	if r.Matches != nil {
		out.Matches = make([]apitypes.Match, len(r.Matches))
		for i, m := range r.Matches {
			out.Matches[i] = apitypes.Match(m)
		}
	}
	return out
}
