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
// Every repository Build, BuildBare, Init, InitBare and CloneShared return
// lives in tb.TempDir() and belongs to the calling test alone. The
// repository CachedSynthetic returns is shared by all tests of the checkout
// and must be treated as read-only; copy it with CloneShared before writing.
//
// The helpers are safe to call from parallel tests.
package testrepo
