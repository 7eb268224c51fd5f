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
//     again, plainly, which joins the command's cgroup and starts itself
//     once more in new user, mount, PID, network, IPC, UTS and cgroup
//     namespaces (Go starts a process in a new user namespace with a full
//     fork, whose cost grows with the daemon's memory, and the helper is
//     small). There, as PID 1, it builds the command's root (see
//     sandbox_linux.go): the host's file system read-only, with the data
//     directory, the repositories, the base checkouts, /run and the
//     directories of the host's sockets, and people's homes absent, not
//     covered (below a directory the daemon may traverse but not list,
//     only what is shown appears); a fresh /proc (its sys, sysrq-trigger, irq and bus
//     read-only), a minimal /dev, private size-bounded /tmp and
//     /var/tmp; the view at one path (/workspace/<repo>) and its home at
//     another (/home/sessiond), the same for every session; all of it
//     nosuid, the writable parts nodev too. It pivots into that root,
//     becomes undumpable, and starts the command from one thread with an
//     empty capability bounding set, no_new_privs, Landlock (where the
//     kernel has it) and no descriptor above 2, so the command holds no
//     capability and can gain none, cannot change a mount, and writes only
//     to its view, its home, its tool caches (/cache) and its temporary
//     directories. Limits
//     (limits.go): memory, processes and CPU weight by a cgroup per
//     command (v2 where delegated, else v1's memory, pids, cpu and freezer
//     hierarchies, else rlimits of the command alone: it starts traced,
//     stops at its exec and gets them there, so neither its helper nor
//     the daemon holds them; the result says which), the private tmpfs
//     mounts by their size, the scratch by the daemon watching it (files
//     the command unlinked but holds open count too; the command is
//     killed past its bound and the scratch keeps only what the record
//     holds). Killing the helper's process group (both
//     stages; the second, PID 1 of its namespace, also dies with the
//     first) kills every process the command started, and its cgroup is
//     killed too; the mounts die with the namespace, on timeout,
//     cancellation, shutdown or a crash of the daemon (the helper has a
//     parent-death signal).
//
// It gives each view a real .git (gitview.go): the session's own, in
// its scratch, bound over the view's ".git" (which capture never
// reports), whose objects are a per-repository directory of exactly what
// branches and tags reach plus the session's own pack, never the
// repository's object directory; an index built once per base checkout
// and copied in; an fsmonitor hook that names what the upper directory
// holds. What a command commits there is read back (ReadGitHead,
// GitObjects) through no link and no alternate it planted.
//
// A command with an egress proxy (Command.Egress, egress.go) keeps its
// network namespace of its own; the daemon serves the proxy on a Unix
// socket that the helper joins to a port of the command's loopback, as
// it joins a service's port (ports.go), so the proxy is the only way
// out.
//
// It also owns the repositories' shared tool caches (caches.go):
// <data>/workdir/caches/<repo>, mounted read-write at /cache in every
// command of the repository's sessions (or the session's own, in its
// scratch, for private ones), the environment pointing Go, npm, pip, uv
// and cargo at them, trimmed least recently used within a budget after a
// command ends and never while one of that repository runs.
//
// And it owns the environment layers (environment.go): a repository's
// setup run once per key in a view of the base with the shared caches,
// what it produced that .gitignore ignores kept read-only under
// <data>/workdir/environments/<key> (built under a temporary name and
// renamed; a failure kept with its log), stacked between the base
// checkout and the session's layer (overlay: a second lower directory;
// copy: copied into the view), evicted least recently used within a
// budget and never while a command holds it.
//
// Invariants:
//   - A scratch directory reflects the record at its saved sequence
//     number, or carries a "running" marker: a command may have changed
//     it without the change being recorded, so the next Prepare rebuilds
//     it from the record.
//   - Capture never changes the record; the caller records what passes
//     its rules and hands the refused paths to Settle, which puts them
//     back as the record has them, so directory and record agree.
//   - Isolated, nothing a command does with ordinary system calls reaches
//     what the daemon owns; the escape suite (escape_test.go) is the list
//     of what was tried. Kernel exploits are out of scope.
//   - Services live beside the daemon's work on a layer: they may change
//     its directory while it syncs, settles, resets and captures. So the
//     daemon edits and reads a layer directory (copy mode's view, overlay
//     mode's upper directory) only beneath its root (beneath.go): through
//     an os.Root of it, and below that through directory descriptors on
//     which each call names one entry and follows no link (whiteouts by
//     mknodat, opaque marks by f*xattr on a descriptor, files read
//     without following a link or waiting on a FIFO). However a service
//     swaps paths for links meanwhile, nothing resolves outside the
//     directory: the call fails, or reads another file of the view. In
//     overlay mode the edits while services run go through their shared
//     mount (share.go), by the copy layer's code on an os.Root of it; a
//     copy mode reset empties the view's directory rather than replacing
//     it, so a live service's bind keeps the view. The base checkouts
//     and environment layers, which only the daemon writes, are written
//     by plain path, and removeAll works beneath its path's parent
//     (homes and tool caches are services' too). service_race_test.go
//     races a service against all of it.
//   - The scratch is 0700 and never keeps a setuid or setgid bit or a
//     file capability (stripped after every command; the mounts are
//     nosuid meanwhile). The sweep that strips them and measures the
//     scratch runs while a command may change the tree, so it walks by
//     descriptor and never follows a link (sweep_linux.go).
//   - Where the kernel refuses namespaces, commands run without isolation
//     (Manager.Isolated is false) in copy mode, through a helper that is
//     their child subreaper (so every descendant dies with the command):
//     they can then read the data directory and the repositories, and
//     write anywhere the daemon's user may, through a symlink out of the
//     view too, and such a write is neither captured nor undone; the
//     daemon refuses read-limited sessions there. Config.NoNamespaces
//     takes that path where the kernel would allow namespaces (overlay
//     mode, which needs a mount namespace, is then refused), so the
//     conformance suite runs on it too, and runs again as an unprivileged
//     user when the tests run as root.
//
// Platforms: the helper, the namespaces and overlayfs are Linux's
// (helper_linux.go, sys_linux.go). Elsewhere on a unix (macOS) the
// package builds and view directories are unisolated copies: auto and
// copy work, overlay is ErrUnsupported. Windows is not supported.
//
// Services (serve.go, ports.go): Scratch.Serve starts a command that
// outlives the scratch's commands, in namespaces of its own on the view
// as it was prepared, holding its base checkout until it ends; Stop
// sends its process group SIGTERM (passed on by both stages of the
// helper) and kills the whole namespace after a grace period. The
// helper joins ports of a command's own loopback to Unix sockets of the
// host (PortLink: Expose, the daemon reaching a service; Reach, a
// command reaching one), relaying bytes in the helper itself, PID 1 of
// the namespace; nothing is put on the host's network. In overlay mode
// the view is one mount while services run (share.go): a holder mounts
// it, services and commands attach clones of it, and the daemon edits
// the view through it, never the upper directory beneath a live mount;
// the view then stays on its base (ErrViewHeld), and a holder that ended
// under live services (killed from outside) refuses commands with
// ErrViewHeld too, never mounting the upper directory a second time.
//
// Concurrency: a Manager and its Cache are safe for concurrent use. A
// Scratch belongs to one command at a time (services beside it leave its
// state alone); the session engine runs one command per session.
package workdir
