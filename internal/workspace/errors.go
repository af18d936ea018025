package workspace

import "errors"

// Typed failures. Callers test them with errors.Is; the returned errors wrap
// them with the path, key or limit involved.
var (
	// ErrTooLarge: a workspace or pack over the Limits.
	ErrTooLarge = errors.New("workspace: over the limits")
	// ErrUnsafePath: a path that is absolute, not clean, climbs out with
	// "..", names a .git directory, or is too deep or too long.
	ErrUnsafePath = errors.New("workspace: unsafe path")
	// ErrLink: a symlink whose target leaves the workspace, or a link where
	// a directory must be.
	ErrLink = errors.New("workspace: link leaves the workspace")
	// ErrSpecial: a file mode a snapshot never holds (submodule, device).
	ErrSpecial = errors.New("workspace: special file")
	// ErrDenied: a credential file, which a snapshot never holds.
	ErrDenied = errors.New("workspace: credential file")
	// ErrSecret: a snapshot under TETHER_REDACT=refuse found a credential
	// file, or a file holding a secret-looking token, that the run's
	// source did not track.
	ErrSecret = errors.New("workspace: a credential the run's source did not track")
	// ErrCorrupt: a pack or object that is truncated, malformed, uses
	// deltas, or does not hash to what names it.
	ErrCorrupt = errors.New("workspace: corrupt snapshot")
	// ErrDigestMismatch: a downloaded pack whose sha256 is not the digest
	// its key names.
	ErrDigestMismatch = errors.New("workspace: pack digest does not match its key")
	// ErrMissing: a snapshot whose commit, tree or blob is in none of its
	// packs, or a pack the store no longer holds.
	ErrMissing = errors.New("workspace: snapshot incomplete")
	// ErrSource: a source to start a workspace from that cannot be read.
	ErrSource = errors.New("workspace: cannot read the source")
)
