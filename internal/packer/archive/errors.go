package archive

import "errors"

// Typed failures. Callers test them with errors.Is; the returned errors wrap
// them with the entry, path or limit involved. internal/packer reports the
// same values under the same names.
var (
	// ErrUnsafePath: an archive entry or session id that is empty, absolute,
	// not clean, or climbs out of its directory with "..".
	ErrUnsafePath = errors.New("packer: unsafe path")
	// ErrLinkEntry: a symlink or hard link, in an archive or in a session
	// directory being packed.
	ErrLinkEntry = errors.New("packer: link entry")
	// ErrSpecialEntry: a device, fifo, socket or any entry that is neither a
	// regular file nor a directory.
	ErrSpecialEntry = errors.New("packer: special file entry")
	// ErrNotWhitelisted: an archive entry that is not part of the session's
	// whitelisted files for this backend.
	ErrNotWhitelisted = errors.New("packer: entry outside the session whitelist")
	// ErrHeaderMismatch: the archive was made for another backend or another
	// session id.
	ErrHeaderMismatch = errors.New("packer: archive header does not match")
	// ErrTooLarge: a session or archive over the configured limits.
	ErrTooLarge = errors.New("packer: over the size limits")
	// ErrCorrupt: bad magic, a truncated or corrupt stream, duplicate
	// entries, or an archive without the session's main file.
	ErrCorrupt = errors.New("packer: corrupt or truncated archive")
	// ErrFormatVersion: an archive written in a format version this build
	// does not read.
	ErrFormatVersion = errors.New("packer: unsupported archive format version")
	// ErrDigestMismatch: a blob whose digest is not the one recorded when
	// it was packed (see VerifyDigest).
	ErrDigestMismatch = errors.New("packer: archive digest does not match the recorded one")
)

// ErrBrokenChain: a delta that does not follow what the archives before it
// left (a file it extends is missing, of another size or content, or the
// result is not the file the delta was packed from), or a list of parts
// that does not start with a whole archive. It is also an ErrCorrupt.
var ErrBrokenChain = Sub("packer: delta does not follow the archives before it", ErrCorrupt)

// Sub returns an error with its own message that is also parent for
// errors.Is.
func Sub(msg string, parent error) error { return &subError{msg: msg, parent: parent} }

type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }
