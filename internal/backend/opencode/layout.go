package opencode

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"

	"github.com/tether-run/tether/internal/packer"
)

// SessionsDir holds the sessions' exports, relative to the state root.
//
// opencode keeps every session of its data directory in one SQLite
// database (<root>/.local/share/opencode/opencode.db, with a write-ahead
// log), so a session is not a set of files a packer could take. After
// each visit the executor writes the session's own export (`opencode
// export ID`: the session's record and every message with its parts) to
// SessionsDir/<id>.json; that file is the session Tether packs, and a
// resume on a root whose database does not hold that very export imports
// it first (see sync).
const SessionsDir = "sessions"

// layout is where opencode sessions are in env: a session is
// the one file SessionsDir/<id>.json, restored under the same name. The
// database, the CLI's logs, caches and credentials are never packed.
var layout = packer.OneFile{Match: isSessionPath, Find: findSessions}

// sessionID is what a session id may hold to name a file: opencode's are
// ses_ and 26 base62 characters.
var sessionID = regexp.MustCompile(`^[0-9A-Za-z_-]{1,128}$`)

// exportName is the export's path for id, relative to the state root.
func exportName(id string) string { return SessionsDir + "/" + id + ".json" }

// isSessionPath reports whether rel is session id's export.
func isSessionPath(rel, id string) bool {
	return sessionID.MatchString(id) && rel == exportName(id)
}

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
