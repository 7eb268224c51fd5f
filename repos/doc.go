// Package repos is the registry of repositories: a name → an open
// gitstore.Repo, backed by the store's record of each repository (its
// path, and later its origin and environment configuration), the
// repository's policies (accept and exec), and its environment: plain
// variables and secrets, sealed by a secret.Box before they reach the
// store and opened only for commands and the secret rule of writes. Every other package
// reaches a repository through a Registry handed to it at construction;
// none opens one by itself.
//
// Invariants:
//   - One open gitstore.Repo per registered name in a process, opened on
//     first use and kept until Close (or until the name is registered
//     again), so its caches and housekeeping are shared by every user.
//   - Names are letters, digits, '-', '_' and '.', not starting with '.',
//     at most 100 bytes; a bad name or path is record.ErrInvalid and
//     registers nothing.
//   - A repository without a policy of its own has the Registry's
//     defaults (Config.Defaults).
//   - A write that finds a repository's objects or refs full is a
//     *record.NoSpaceError naming the repository (gitstore's
//     Options.NoSpace, set when the Registry opens it).
//   - A secret's value is never in an error, nor in what Environment
//     returns (the names only).
//
// Concurrency: a Registry is safe for concurrent use; Registry.mu guards
// only the map of open repositories, varsMu the opened variables (dropped
// when SetEnvironment changes them), envMu serializes SetEnvironment, and
// each freshCache's mu its part of the policies and environment records
// kept for commands (dropped by this Registry's writes; another node's
// are seen within settingsFresh).
package repos
