package sessionlog

import (
	"errors"
	"io/fs"
)

// Errors returned by the Service. Callers test them with errors.Is.
var (
	// ErrNotFound is a genuine absence: no log with that id exists. A
	// storage fault is never reported as ErrNotFound.
	ErrNotFound = errors.New("sessionlog: session not found")
	// ErrCollision refuses a session whose id is already used by a log with
	// another header (another cwd, backend or lineage).
	ErrCollision = errors.New("sessionlog: session id collision")
	// ErrCorrupt reports a committed record that cannot be read back.
	ErrCorrupt = errors.New("sessionlog: corrupt log")
	// ErrNotSerializable refuses a value that would not survive a JSON round
	// trip: NaN, ±Inf, invalid UTF-8, integers beyond 2^53, funcs, chans,
	// complex numbers, maps with non-string keys, []byte, cycles.
	ErrNotSerializable = errors.New("sessionlog: value does not survive a JSON round trip")
	// ErrInvalid refuses a malformed id, header or event sequence (for
	// example a turn end without a turn start).
	ErrInvalid = errors.New("sessionlog: invalid input")
	// ErrVersion refuses a log or database written in another format version.
	ErrVersion = errors.New("sessionlog: unsupported format version")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("sessionlog: closed")
)

// IsAbsent reports whether err is the one error a storage hook may translate
// into ErrNotFound: ENOENT. Everything else (EACCES, ENOTDIR, EIO) is a fault.
func IsAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}
