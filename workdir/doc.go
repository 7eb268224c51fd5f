// Package workdir makes a session's view a real directory that commands
// run in, and finds what they changed.
//
// It owns three things:
//   - The base checkout cache (Cache): each base tree checked out once,
//     read-only by convention, under <data>/workdir/bases/<tree id>,
//     shared by every session on it. A checkout is written straight from
//     the objects by parallel workers, synced with one syncfs, and renamed
//     into place, so a directory named by a tree id is always complete
//     (".tmp-…" leftovers of a crash are removed on open). Beyond the
//     byte budget the least recently used checkouts nobody holds are
//     removed; a held one never is.
//   - Each session's layer (<data>/workdir/sessions/<id>): in overlay
//     mode an overlayfs upper directory over the base checkout, holding
//     the overlay's own entries (files; whiteouts and opaque directories
//     for deletions, in the user.overlay.* spelling of userxattr mounts)
//     and the ignored outputs of earlier commands; in copy mode a full
//     copy of the view. Both implement one small interface (layer) and
//     pass one conformance suite. Before a command the layer is synced on
//     the paths the mutation log says changed since the last command;
//     after it, capture walks the upper directory (overlay: cost follows
//     the change) or the copy (with a stat cache like git's index,
//     re-hashing racy entries as git does), drops what the view's
//     .gitignore files ignore, and reports the rest as Changes.
//     A view may hide files (View.Readable, the session's read policy):
//     the copy leaves them out, the upper directory whites them out
//     (the shallowest directory with nothing readable below it, or the
//     file), every rebuild of a subtree spells those whiteouts out again,
//     and capture compares with the view as shown, so a hidden file is
//     never reported deleted and a write over one is a new file (which
//     the caller refuses).
//   - Running: a command runs through a helper, this same binary started
//     again, plainly, which starts itself once more in new user, mount and
//     PID namespaces (and network, when the command may not use it): Go
//     starts a process in a new user namespace with a full fork, whose cost
//     grows with the daemon's memory, and the helper is small. The helper
//     mounts the view (overlayfs per command, so nothing stays mounted),
//     makes every other mount read-only, covers the data directory and the
//     registered repositories with empty read-only tmpfs mounts and /tmp,
//     /var/tmp and /dev/shm with private writable ones, and starts the
//     command with a minimal environment. So the view, its home directory in
//     the scratch and those private directories are all a command can write:
//     a write through a symlink out of the view, or by an absolute path,
//     fails with EROFS instead of landing where capture cannot see it.
//     Killing the helper's process group (both stages; the second, PID 1
//     of its namespace, also dies with the first) kills every process the
//     command started, and the mounts die with the namespace, on timeout,
//     cancellation, shutdown or a crash of the daemon (the helper has a
//     parent-death signal).
//
// Invariants:
//   - A scratch directory reflects the record at its saved sequence
//     number, or carries a "running" marker: a command may have changed
//     it without the change being recorded, so the next Prepare rebuilds
//     it from the record.
//   - Capture never changes the record; the caller records what passes
//     its rules and hands the refused paths to Settle, which puts them
//     back as the record has them, so directory and record agree.
//   - Where the kernel refuses namespaces, commands run without isolation
//     (Manager.Isolated is false) in copy mode: they can then read the
//     data directory and the repositories, and write anywhere the
//     daemon's user may, through a symlink out of the view too, and such
//     a write is neither captured nor undone. Config.NoNamespaces takes
//     that path where the kernel would allow namespaces (overlay mode,
//     which needs a mount namespace, is then refused), so the conformance
//     suite runs on it too, and runs again as an unprivileged user when
//     the tests run as root. This is isolation for correctness, not a
//     security boundary.
//
// Platforms: the helper, the namespaces and overlayfs are Linux's
// (helper_linux.go, sys_linux.go). Elsewhere on a unix (macOS) the
// package builds and view directories are unisolated copies: auto and
// copy work, overlay is ErrUnsupported. Windows is not supported.
//
// Concurrency: a Manager and its Cache are safe for concurrent use. A
// Scratch belongs to one command at a time; the session engine runs one
// command per session.
package workdir
