package pi

import (
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/pi/session"
	"github.com/tether-run/tether/internal/packer"
)

// layout is where pi keeps a session in env: the state root is the flat
// directory pi runs with --session-dir, and a session is the one file pi
// names there
//
//	<timestamp>_<id>.jsonl
//
// where timestamp is the session's creation time as an ISO string with ':'
// and '.' replaced by '-' (2026-11-30T12-27-00-123Z) and id is the session's
// uuid (pi 0.73.1, SessionManager.newSession). It is restored under the same
// name.
var layout = packer.OneFile{Match: session.IsFile, Find: cliexec.FilesIn(".")}
