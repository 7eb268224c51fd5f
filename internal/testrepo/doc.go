// Package testrepo builds git repositories for the tests and benchmarks of
// every other package. Repositories are built at runtime, never shipped as
// binary fixtures.
//
// It owns:
//
//   - the fixtures in testdata/repos/*.fi: small hand-written repositories as
//     git fast-import streams, built with Build and BuildBare;
//   - Synthetic, the deterministic generator of large repositories, and
//     CachedSynthetic, which builds one once per checkout under .cache/;
//   - Git and its siblings, which run the git CLI with a hermetic
//     environment (no system or global config, fixed identity and dates,
//     C locale) so that ids are the same on every machine.
//
// The fixtures (each stream's header comment lists its refs and cases):
//
//   - small: main (3 commits), feature, annotated tag v1, lightweight tag
//     v0; git tree ordering (a-b, a.txt, a/, a0), a/b/c/deep.txt, an
//     executable, symlinks to a file and a directory, an empty file, a
//     binary blob with a NUL byte, a rename and a deletion in history.
//   - gitlink: submodule entries (mode 160000) and their .gitmodules.
//   - unicode: non-ASCII names, NFC and NFD spellings of one name, names
//     differing only in case, each pair in different directories.
//   - merge: branches ours, theirs and clean for three-way merges, with
//     content, modify/delete, add/add and file/directory conflicts.
//
// Every repository Build, BuildBare, Init, InitBare and CloneShared return
// lives in tb.TempDir() and belongs to the calling test alone. The
// repository CachedSynthetic returns is shared by all tests of the checkout
// and must be treated as read-only; copy it with CloneShared before writing.
//
// The helpers are safe to call from parallel tests.
package testrepo
