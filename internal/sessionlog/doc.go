// Package sessionlog is Tether's durable conversation store: one append-only
// log of typed events per session, behind a Service that one Coordinator
// implements for every storage backend.
//
// What it promises:
//
//   - Append is durable when it returns, assigns contiguous sequence numbers
//     starting at 1, and refuses (with ErrNotSerializable) any value that would
//     not survive a JSON round trip, so nothing corrupt ever reaches storage.
//   - Materialization is lazy: Create only records the header in memory; no
//     file or row exists until the first Append.
//   - A log whose final turn never closed (a crash mid-turn) is preserved and
//     closed by durably appending synthetic closers: a step end if a step was
//     open, then a turn end with reason "interrupted". Only a torn fragment,
//     one that was never fully written, is discarded. Corruption inside the
//     committed region makes Load fail with ErrCorrupt; it is never truncated.
//   - A session is identified by id. Its header carries the working directory
//     (cwd) it belongs to; a log with the same id under another cwd is a
//     collision (ErrCollision), never a resume, and the original stays untouched.
//   - A log written in another format version (or a SQLite database of
//     another schema version), older or newer, is refused with ErrVersion by
//     every call that reads it, before any of its records is interpreted,
//     and is never modified: not repaired, not reported corrupt.
//   - Only a genuine absence is ErrNotFound. Every other storage fault
//     (EACCES, ENOTDIR, EIO, ...) propagates as itself.
//
// Backends (subpackages memory, jsonl and sqlite) implement only the small
// Storage hooks; the Coordinator owns adoption, per-session serialized and
// group-committed appends, drain on Close, crash repair and collision checks.
// One conformance suite (subpackage contracttest) runs against all of them.
//
// A Coordinator assumes it is the only writer of its storage: two processes
// must not open the same directory or database at once.
package sessionlog
