package pi

import (
	"errors"
	"io/fs"
	"os"

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
var layout = packer.OneFile{Match: isSessionFile, Find: findFiles}

// isSessionFile reports whether name is pi's file name for session id
// (the session leaf's rule, which the console reads archives with).
var isSessionFile = session.IsFile

// findFiles lists the flat session directory.
func findFiles(root *os.Root, _ string) ([]string, error) {
	ents, err := packer.ReadDir(root, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, err
}
