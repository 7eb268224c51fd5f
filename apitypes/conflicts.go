package apitypes

// Conflicts a session keeps (SPEC §14): a rebase or merge with
// "conflicts": "keep" moves the session anyway and leaves git's diff3
// markers in each conflicted file; "reuse" also applies resolutions the
// repository remembers (rerere). MutationResult.Conflicts lists what was
// kept, Reused the paths a remembered resolution resolved.

// Conflict modes of RebaseRequest and MergeRequest.
const (
	ConflictsRefuse = "refuse"
	ConflictsKeep   = "keep"
	ConflictsReuse  = "reuse"
)

// SessionConflicts is GET /v1/sessions/{id}/conflicts and the answer of
// POST …/resolve: the session's unresolved conflicts. Each carries its
// rerere id, and OfferedResolution when the repository remembers a
// resolution that applies to the file as it is now.
type SessionConflicts struct {
	Conflicts []Conflict `json:"conflicts"`
}

// ResolveRequest marks conflicts resolved with their files as they are
// now (POST /v1/sessions/{id}/resolve).
type ResolveRequest struct {
	Paths []string `json:"paths"`
}
