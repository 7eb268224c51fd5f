package checkruns

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/session"
)

// Keeper returns the session.ExecConfig.Ran that keeps every run in cs's
// store. A run that cannot be kept is logged: the command ran, and its
// answer does not depend on the record.
func Keeper(cs *changeset.Service, log *slog.Logger) func(context.Context, uuid.UUID, session.ExecResult) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, id uuid.UUID, res session.ExecResult) {
		in := changeset.RunInput{
			Session: id, Argv: res.Argv, ExitCode: res.ExitCode, Duration: res.Duration, Seq: res.Seq,
			Changed: res.Mutation != nil, Stdout: res.Stdout, Stderr: res.Stderr,
		}
		if (res.TimedOut || res.Signal != "") && in.ExitCode == 0 {
			in.ExitCode = -1
		}
		if err := cs.RecordRun(ctx, in); err != nil {
			log.Warn("keep run", "session", id, "err", err)
		}
	}
}
