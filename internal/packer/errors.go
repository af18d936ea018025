package packer

import (
	"errors"

	"github.com/tether-run/tether/internal/packer/archive"
)

// Typed failures. Callers test them with errors.Is; the returned errors wrap
// them with the entry, path or limit involved. Those of reading an archive
// are internal/packer/archive's, the same values.
var (
	// ErrUnsafePath: an archive entry or session id that is empty, absolute,
	// not clean, or climbs out of its directory with "..".
	ErrUnsafePath = archive.ErrUnsafePath
	// ErrLinkEntry: a symlink or hard link, in an archive or in a session
	// directory being packed.
	ErrLinkEntry = archive.ErrLinkEntry
	// ErrSpecialEntry: a device, fifo, socket or any entry that is neither a
	// regular file nor a directory.
	ErrSpecialEntry = archive.ErrSpecialEntry
	// ErrNotWhitelisted: an archive entry that is not part of the session's
	// whitelisted files for this backend.
	ErrNotWhitelisted = archive.ErrNotWhitelisted
	// ErrHeaderMismatch: the archive was made for another backend or another
	// session id.
	ErrHeaderMismatch = archive.ErrHeaderMismatch
	// ErrTooLarge: a session or archive over the configured Limits.
	ErrTooLarge = archive.ErrTooLarge
	// ErrCorrupt: bad magic, a truncated or corrupt stream, duplicate
	// entries, or an archive without the session's main file.
	ErrCorrupt = archive.ErrCorrupt
	// ErrFormatVersion: an archive written in a format version this build
	// does not read.
	ErrFormatVersion = archive.ErrFormatVersion
	// ErrDigestMismatch: a blob whose digest is not the one recorded when
	// it was packed (see VerifyDigest).
	ErrDigestMismatch = archive.ErrDigestMismatch
	// ErrNoSession: the live root holds no such session to pack.
	ErrNoSession = errors.New("packer: no such session")
	// ErrExists: the destination already holds something at a session path
	// that is not what the session needs there (a symlink, a device, a file
	// where a directory goes); it is left untouched.
	ErrExists = errors.New("packer: destination path is occupied")
)

// ErrDenied: an entry on the deny list (credentials, settings, databases,
// backups, telemetry). The deny list wins over the whitelist, so ErrDenied is
// also an ErrNotWhitelisted.
var ErrDenied error = archive.Sub("packer: entry is on the deny list", ErrNotWhitelisted)

// ErrTooDeep: a path with more components than Limits.MaxDepth or more
// bytes than Limits.MaxPathBytes. It is also an ErrTooLarge.
var ErrTooDeep error = archive.Sub("packer: path too deep or too long", ErrTooLarge)

// ErrReservedID: a session id that is a name the backend's CLI keeps for
// itself where session files go (Claude Code's memory/ folder in the
// project directory). It is also an ErrUnsafePath.
var ErrReservedID error = archive.Sub("packer: session id is a name the CLI reserves", ErrUnsafePath)

// ErrHardLink: a regular file with more than one hard link in a session
// being packed; its bytes may be another file's (a credential's). It is
// also an ErrLinkEntry.
var ErrHardLink error = archive.Sub("packer: file has more than one hard link", ErrLinkEntry)
