// Package mcpserver is the Model Context Protocol server for coding
// agents (SPEC section 10): sixteen tools over one session — read_file,
// read_files, write_file, edit_file, delete_path, move_path, list_dir,
// glob, grep, diff, status, checkpoint, rollback, log, run, submit — served
// over standard input and output (`sessiond mcp`) or streamable HTTP (the
// daemon's /mcp and /mcp/sessions/{id}), with the SDK
// github.com/modelcontextprotocol/go-sdk.
//
// One implementation over one small interface: the tools call Backend,
// which *client.Client satisfies both over HTTP (a client of a running
// daemon) and in-process (client.NewInProcess over the API's own handler,
// which calls the engine). So the path rules, policies, limits,
// error codes and messages are the engine's and the API's, byte for byte,
// whichever way an agent connects; this package owns none of them. So are
// the texts it shows: diffs (diff's and edit_file's), grep's context lines
// and whether a file is binary come from the engine, as the API and the
// CLI show them; this package lays them out for a model. It links no
// engine package (deps_test.go). A tool handler makes one Backend call,
// as an HTTP handler calls one engine method; thin_test.go checks it on
// the source, with the exceptions it names: edit_file reads the version
// it edits and writes conditionally on it, status gathers the session,
// its changes, checkpoints and overlap reports, log reads the session's
// count before its latest mutations, and list_dir lists level by level.
//
// Invariants:
//   - Every result is text written for a model plus the same data as
//     structured content, and is capped (default 100 KB of text) with a
//     note saying what was cut and how to get the rest.
//   - Every failure is a tool error (isError) whose text and structured
//     content carry the API's code, message and details (rule, path,
//     current version); the protocol only fails for malformed requests.
//   - edit_file changes a file all or nothing: each old_text must match
//     exactly once (unless replace_all), edits apply in order to the
//     result of the previous ones, and the write is conditional on the
//     version read (If-Match), so a concurrent change fails the edit
//     instead of being overwritten. Line endings (LF or CRLF) and a
//     missing final newline are kept.
//   - The work a tool does on what it reads is linear (or n log n) in
//     it, and stops when the call's context ends: diff cuts the diff
//     into files by slicing it in one pass, edit_file's near-match
//     search slides one window down the file (a KMP search for the
//     same lines with other whitespace, then bigram counts updated as
//     lines enter and leave the window, and a line-by-line score of the
//     few best windows only). Loops over lines look at the context every
//     few thousand lines.
//   - Bound servers (Options.Session) have no `session` argument in any
//     schema; unbound ones require it on every tool.
//   - Every tool declares an outputSchema, derived from the Go type of its
//     structured content (addTool's Out; a result of another type is an
//     internal error), which a tool error's {"error": …} also fits, since
//     clients validate every result's structured content against it; and
//     no input property is nullable: arrays such as
//     edits, paths and argv are typed "array", since strict
//     function-calling clients refuse a required field that may be null.
//   - A tool's raw arguments pass the API's Unicode check
//     (apitypes.CheckStrings) before its input is used, since the SDK's
//     decoder would turn invalid UTF-8 and lone surrogates into U+FFFD: a
//     path (an input field tagged sessiond:"path") is invalid_path.
//   - status says what its token may see: with a session token the API's
//     events name no other session, so an overlap is with "another
//     session" (and its agent); with the admin token, with its id.
//
// A Server built by New is safe for concurrent use by the SDK (tool calls
// run in parallel); it keeps no state of its own beyond its options.
package mcpserver
