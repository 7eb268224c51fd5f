// Package secret owns what sessiond does with a repository's secrets:
// the names they may have, their sealing at rest (AES-256-GCM under a key
// kept in the data directory beside the token key), and their masking in
// every output sessiond returns.
//
// Invariants:
//   - A secret's value never leaves this process except into a command's
//     environment: errors and messages of this package name a secret by
//     its name only.
//   - A sealed value is bound to its repository and name (they are the
//     AEAD's additional data), so a row copied to another name or
//     repository does not open.
//   - Masking replaces every occurrence of a value of at least MinMask
//     bytes with "***", across the chunks of a stream: a Stream holds
//     back the tail of its input that could still become a value.
//
// Concurrency: a Box and a Masker are safe for concurrent use (they are
// immutable after construction); a Stream is not.
package secret
