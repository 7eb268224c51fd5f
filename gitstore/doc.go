// Package gitstore is sessiond's git object layer and the only package that
// imports go-git.
//
// It owns object ids and modes, immutable decoded trees cached by id,
// blob and entry lookup at a path, listing under a prefix in git order,
// durable object writes, the tree builder, commits, and compare-and-swap
// ref updates.
//
// Invariants:
//   - Objects are immutable, so decoded trees and small blobs are cached by
//     id in LRUs and never invalidated. Everything handed out is shared and
//     read-only.
//   - Writes are durable before they return: a Batch writes one loose object
//     or one pack plus index, each fsynced, renamed into place and its
//     directory fsynced. Nothing (a ref, a database row) may point at an
//     object before the Flush that wrote it returns. An object that already
//     exists is not written again; its file's mtime is refreshed, as git
//     does, so gc's grace period starts again.
//   - Trees are written in git's canonical form: entries sorted with a
//     directory comparing as "name/", canonical modes, no empty trees below
//     the root. The builder re-encodes only the directories on changed
//     paths and keeps every other subtree id.
//   - Refs change only by compare-and-swap under git's own "<ref>.lock"
//     file, which is fsynced before it is renamed over the ref, so the git
//     CLI and sessiond can update one repository at once.
//
// Concurrency: a Repo is safe for concurrent use. go-git storages are not,
// so each read borrows one from a pool and copies out what it needs. A
// Batch belongs to one goroutine.
//
// Objects this process writes go into its own undeltified packs, which it
// reads itself (opening the pack per read; the caches absorb most reads);
// the pooled storages re-read pack indexes only when a read misses after
// objects/pack changed (a repack, or another writer). Once 32 small packs
// of its own exist they are merged into one, so a busy daemon does not
// leave thousands; `git gc` consolidates the rest as usual.
package gitstore
