package opencode

import (
	"errors"
	"io/fs"
	"os"
	"path"

	"github.com/tether-run/tether/internal/backend/opencode/session"
	"github.com/tether-run/tether/internal/packer"
)

// SessionsDir holds the sessions' exports, relative to the state root
// (the session leaf's: see there why a session is its export).
const SessionsDir = session.Dir

// layout is where opencode sessions are in env: a session is
// the one file SessionsDir/<id>.json, restored under the same name. The
// database, the CLI's logs, caches and credentials are never packed.
var layout = packer.OneFile{Match: isSessionPath, Find: findSessions}

// exportName is the export's path for id, relative to the state root.
func exportName(id string) string { return session.ExportName(id) }

// isSessionPath reports whether rel is session id's export.
var isSessionPath = session.IsExport

// findSessions lists SessionsDir.
func findSessions(root *os.Root, _ string) ([]string, error) {
	ents, err := packer.ReadDir(root, SessionsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, path.Join(SessionsDir, e.Name()))
	}
	return out, err
}
