// Package environment owns a repository's environment configuration
// (SPEC §13): the setup commands that install its dependencies, the key
// globs whose files decide when they must be installed again, the include
// files every view gets, and the default setup derived from the lock
// files when nothing is configured (auto).
//
// It parses a configuration (JSON or YAML, from the API or from
// .sessiond/environment.json|yaml at a base commit) with errors that name
// the position or the field, and resolves it against a base tree into a
// Plan: the steps to run, the files to include and the layer's Key, a
// hash of the configuration and the blob ids of the key files at the base
// and of nothing else, so consecutive commits that do not touch a lock
// file share one layer.
//
// Building, stacking and evicting the layers is package workdir's; when
// to build and what an exec result says of it, package session's.
//
// Everything here is a pure function of its inputs and safe for
// concurrent use.
package environment
