package opencode

import (
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/opencode/session"
	"github.com/tether-run/tether/internal/packer"
)

// SessionsDir holds the sessions' exports, relative to the state root
// (the session leaf's: see there why a session is its export).
const SessionsDir = session.Dir

// layout is where opencode sessions are in env: a session is
// the one file SessionsDir/<id>.json, restored under the same name. The
// database, the CLI's logs, caches and credentials are never packed.
var layout = packer.OneFile{Match: session.IsExport, Find: cliexec.FilesIn(SessionsDir)}

// exportName is the export's path for id, relative to the state root.
func exportName(id string) string { return session.ExportName(id) }
