// Package ui is the review page: static assets embedded in the binary
// (go:embed) and served at /ui/, with / redirecting there. It has no
// server logic: the page is plain JavaScript modules and CSS, with no
// build step and nothing fetched from elsewhere at run time, and it is a
// client of API v1 only, so anything a reviewer does here a script can do
// with curl. Where the page needed something the API lacked (a
// changeset's revisions, approvals and checks in the list, a revision's
// checks, a stream that starts now), it went into the API.
//
// Pages (one index.html; the modules route on the path):
//   - /ui/ and /ui/changesets: changesets, filtered by repository and
//     status, with a checks badge each.
//   - /ui/changesets/{id}: one changeset: the checks of the revision
//     shown at the top (checks.js), whether it merges onto its branch as
//     the branch is now (asked again when the branch moves), its
//     revisions, files, unified
//     and side-by-side diffs with line comments, the verdict form, stale
//     reads, overlap warnings, the symbol summary, and accept with
//     per-file and per-hunk checkboxes, a dry-run preview, the result or
//     the conflicts; a closed changeset shows its outcome instead of the
//     verdict form. A checkbox updates its file's boxes in place: nothing
//     is rendered again. Reading: the server's syntax tokens (a hunk's
//     spans) as spans with classes, the diff signs drawn by CSS so a
//     copied line is the line; "expand" rows around each hunk that load
//     unchanged lines (GET /v1/changesets/{id}/files/{path}?lines=a-b);
//     the file tree by directory with "viewed" marks in sessionStorage,
//     keyed by the file's blob so a revision that changes it clears the
//     mark; every diff folded past 50 files (changeset.js COLLAPSE_AT),
//     its table built when opened and dropped when closed, the list then
//     loaded without tokens (?spans=false) and an opened file's tokens
//     asked for with it (?path=); keys j/k
//     (files), n/p (hunks), c (comment on the focused line).
//   - /ui/repos/{repo}/layers?branch=: the branch's layers newest first,
//     an undo preview (what comes back, what stays, conflicts), undo.
//   - /ui/sessions: live sessions kept current by the event stream, which
//     starts now (?after=now), never replaying the log; it follows live
//     sessions only.
//   - /ui/sessions/{id}: one session (session.js): its changesets,
//     overlap warnings, the latest command and every command it ran
//     (GET /v1/sessions/{id}/runs), checkpoints and mutations, reloaded
//     as its event stream moves, and the command running now with its
//     output as it comes (GET /v1/sessions/{id}/exec, followed with
//     fetch as the event streams are).
//
// Every id and commit the page shows goes through links.js: a short id
// that never wraps, linked to its page (a session, a changeset) or to the
// repository's commit view when the daemon has a --commit-url template
// (Config.CommitURL, carried to the page in a meta element of
// index.html, so no request is needed for it); long lists are cut with
// "show all" (cutList).
//
// Diffs are rendered by the page itself from the JSON diff
// (GET …/diff?format=json) instead of a vendored renderer such as
// diff2html: the JSON already has the hunks and line numbers a renderer
// would parse back out of unified text, a line comment needs the path and
// the new-file line of the row clicked, and a partial accept needs each
// hunk's index in that JSON, so rendering rows from it directly is less
// code than adapting a renderer built for text, and there is no vendored
// code to keep up to date.
//
// Auth: with an admin token configured the API answers 401; the page then
// asks for a token once (the admin's, or a reviewer's to review as that
// person), keeps it in sessionStorage (this tab only) and sends it as a
// bearer token. No cookies, and the daemon refuses other origins, foreign
// Host names and non-JSON POST bodies (api.Server.Guard), so another page
// cannot drive it. Event streams are read with fetch, which can send that
// header (EventSource cannot), and parsed by api.js's parseEvents as the
// format says (data lines joined with newlines; LF, CRLF or CR); a
// stream the token may not read (403) is given up.
//
// The handler is safe for concurrent use; the assets never change while
// the process runs.
package ui
