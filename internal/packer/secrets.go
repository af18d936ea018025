package packer

import (
	"errors"

	"github.com/tether-run/tether/internal/treepolicy"
)

// RedactEnv names the worker's environment variable that sets the
// RedactMode of its packers and workspace snapshots: "detect" (or empty)
// or "refuse". The worker's configuration (internal/config) reads it; the
// packer takes the mode as an option (WithRedact) and names the variable
// in its messages.
const RedactEnv = treepolicy.RedactEnv

// RedactMode says what packing does when a session file holds something
// shaped like an API key or token. Transcripts record what the agent saw
// (tool output, environment dumps), so a key can end up in one; the archive
// would carry it to the store as is. It is the policy's mode
// (internal/treepolicy), which workspace snapshots follow too.
type RedactMode = treepolicy.RedactMode

const (
	// RedactDetect packs the session and logs a warning per finding, naming
	// the file, the line and the kind of key, never the value.
	RedactDetect = treepolicy.RedactDetect
	// RedactRefuse fails the pack with ErrSecret, naming the file and line.
	RedactRefuse = treepolicy.RedactRefuse
)

// maxSecretWarnings caps the warnings one pack logs.
const maxSecretWarnings = 10

// ParseRedactMode reads a TETHER_REDACT value (treepolicy.ParseRedactMode).
func ParseRedactMode(s string) (RedactMode, error) { return treepolicy.ParseRedactMode(s) }

var (
	// ErrSecret: a session file holds a token shaped like an API key, and
	// the packer runs with RedactRefuse.
	ErrSecret = errors.New("packer: a session file holds a secret-looking token")
	// ErrRedactMode: TETHER_REDACT holds something other than detect or
	// refuse (treepolicy.ErrRedactMode).
	ErrRedactMode = treepolicy.ErrRedactMode
)
