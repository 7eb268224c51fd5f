package mcpserver

import (
	"context"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// Backend is the engine as the tools use it: API v1's operations on a
// session, by id. *client.Client satisfies it, over HTTP or in-process
// (client.NewInProcess).
type Backend interface {
	GetSession(ctx context.Context, id string) (apitypes.Session, error)
	ReadFile(ctx context.Context, id, path string) ([]byte, client.FileMeta, error)
	WriteFile(ctx context.Context, id, path string, data []byte, opts client.WriteOptions) (apitypes.WriteResult, error)
	DeleteFile(ctx context.Context, id, path string, recursive bool) (apitypes.WriteResult, error)
	Edits(ctx context.Context, id string, req apitypes.EditsRequest) (apitypes.EditsResult, error)
	Tree(ctx context.Context, id string, o client.TreeOptions) ([]apitypes.FileInfo, error)
	Search(ctx context.Context, id string, req apitypes.SearchRequest) (apitypes.SearchResult, error)
	Diff(ctx context.Context, id, against string) ([]byte, error)
	Mutations(ctx context.Context, id string, after int64, limit int) ([]apitypes.Mutation, error)
	Checkpoint(ctx context.Context, id, label, message string) (apitypes.Checkpoint, error)
	Checkpoints(ctx context.Context, id string) ([]apitypes.Checkpoint, error)
	Rollback(ctx context.Context, id, checkpoint string) (apitypes.RollbackResult, error)
	Submit(ctx context.Context, id string, req apitypes.SubmitRequest) (apitypes.Changeset, error)
	EventList(ctx context.Context, id string, after int64, limit int, types ...string) ([]apitypes.Event, error)
	// Exec runs a command on the session's view; with output set, the
	// output streams to it as the command writes it.
	Exec(ctx context.Context, id string, in apitypes.ExecRequest, output func(stream string, data []byte)) (apitypes.ExecResponse, error)
	// Services (SPEC §15).
	StartService(ctx context.Context, id string, in apitypes.ServiceRequest) (apitypes.Service, error)
	ServiceLogs(ctx context.Context, id, name string, tail int, follow bool, line func(string)) error
	StopService(ctx context.Context, id, name string) (apitypes.Service, error)
	// RebaseWith and Conflicts: rebase with a conflicts mode, and the
	// session's unresolved conflicts (tools_conflicts.go).
	RebaseWith(ctx context.Context, id, onto, conflicts string) (apitypes.MutationResult, error)
	Conflicts(ctx context.Context, id string) (apitypes.SessionConflicts, error)
}

var _ Backend = (*client.Client)(nil)
