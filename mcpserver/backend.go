package mcpserver

import (
	"context"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/client"
)

// Backend is the engine as the tools use it: API v1's operations on a
// session, by id. *client.Client satisfies it, over HTTP or in-process
// (client.NewInProcess).
type Backend interface {
	GetSession(ctx context.Context, id string) (api.Session, error)
	ReadFile(ctx context.Context, id, path string) ([]byte, client.FileMeta, error)
	WriteFile(ctx context.Context, id, path string, data []byte, opts client.WriteOptions) (api.WriteResult, error)
	DeleteFile(ctx context.Context, id, path string, recursive bool) (api.WriteResult, error)
	Edits(ctx context.Context, id string, req api.EditsRequest) (api.EditsResult, error)
	Tree(ctx context.Context, id string, o client.TreeOptions) ([]api.FileInfo, error)
	Search(ctx context.Context, id string, req api.SearchRequest) (api.SearchResult, error)
	Diff(ctx context.Context, id, against string) ([]byte, error)
	Mutations(ctx context.Context, id string, after int64, limit int) ([]api.Mutation, error)
	Checkpoint(ctx context.Context, id, label, message string) (api.Checkpoint, error)
	Checkpoints(ctx context.Context, id string) ([]api.Checkpoint, error)
	Rollback(ctx context.Context, id, checkpoint string) (api.RollbackResult, error)
	Submit(ctx context.Context, id string, req api.SubmitRequest) (api.Changeset, error)
	EventList(ctx context.Context, id string, after int64, limit int) ([]api.Event, error)
	// Exec runs a command on the session's view; with output set, the
	// output streams to it as the command writes it.
	Exec(ctx context.Context, id string, in api.ExecRequest, output func(stream string, data []byte)) (api.ExecResponse, error)
}

var _ Backend = (*client.Client)(nil)
