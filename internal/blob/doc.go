// Package blob is Tether's byte store: session blobs and run checkpoints
// live here, behind one small interface with three backends (filesystem,
// S3, memory) and an optional encrypting wrapper.
//
// # Promises every Store keeps
//
// Keys are '/'-separated paths checked by ValidateKey: no empty segment, no
// segment starting with '.', no leading or trailing '/', at most 1024 bytes
// with segments of at most 255 bytes. A key is never another key plus
// "/…": stores whose layout maps keys onto directories (the filesystem
// backend, many S3 servers) cannot hold both "a" and "a/b", so a Put that
// would nest fails (never as ErrNotFound), and callers design key schemes
// that never nest.
//
// Put streams r to key and checks that it delivered exactly size bytes
// (size < 0 means "unknown"). A Put is atomic: readers see the old blob or
// the whole new one, never a prefix, and a Put that fails or whose context
// is cancelled leaves nothing visible. With CreateOnly, Put refuses to
// replace a blob: if the key already holds the same bytes Put succeeds
// (a retried Temporal activity re-puts exactly what it put before), and if
// it holds different bytes Put fails with ErrExists. Of several concurrent
// create-only Puts of different bytes exactly one wins.
//
// ErrNotFound means genuine absence and nothing else: ENOENT on the
// filesystem, NoSuchKey (or a 404 HEAD on a bucket that answers) on S3.
// Every other failure — EACCES, ENOTDIR, ELOOP, EIO, a 5xx, a timeout, a
// refused connection, a wrong secret, a missing bucket — is returned as an
// error that is not ErrNotFound, so a caller that treats "absent" as "start
// fresh" never does so because the store was sick. Test with errors.Is.
//
// Delete of a missing key succeeds, because deletes are retried too; it
// still fails on any other fault. List returns the
// keys starting with prefix (a plain string prefix, as in S3), sorted.
//
// GetBytesMax reads a whole blob only if it is at most a given size, and
// fails with ErrTooLarge without reading the rest otherwise.
//
// # Outages
//
// WithRetry wraps a Store so that transient failures (IsTransient: the
// store unreachable, timeouts, S3 throttling and 5xx, a connection cut
// mid-stream) are retried with backoff for up to two minutes an operation,
// while every other error returns at once. Open applies it to every store
// it returns (retry= in the URL or TETHER_STORE_RETRY change the budget).
//
// # Encryption at rest
//
// Encrypted wraps any Store with Tink's streaming AEAD (AES256-GCM-HKDF):
// each blob gets a fresh key derived from the 32-byte master key and a
// random salt, bound to the blob's key, and the payload is sealed in 64 KiB
// segments so Put and Get stream. A wrong master key or any tampering
// (including truncation or swapping two blobs) is an ErrDecrypt error,
// never garbage. Segments are checked as they stream, so a reader may see
// earlier segments before the error: treat any read error as a failed Get.
// Blobs of the previous, hand-made format (TBE1) are still read. Stat and
// List report plaintext sizes. Open turns it on with the URL parameter encrypt=true and
// reads the master key from TETHER_BLOB_KEY (64 hex digits or base64 of 32
// bytes); see Open.
package blob
