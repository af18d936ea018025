package gemini

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/tether-run/tether/internal/packer"
)

// ProjectSlug is the name the executor gives every working directory in
// Gemini CLI's project registry, so that a session's directory does not
// depend on the machine or the working directory it was created in (see
// pinProject).
const ProjectSlug = "tether"

// ChatsDir is where Gemini CLI keeps the sessions of the pinned project,
// relative to the state root (GEMINI_CLI_HOME).
const ChatsDir = ".gemini/tmp/" + ProjectSlug + "/chats"

// layout is where Gemini CLI keeps a session in env: the state root
// is GEMINI_CLI_HOME, and a session is the one JSONL file Gemini CLI names
//
//	.gemini/tmp/tether/chats/session-<stamp>-<first 8 characters of id>.jsonl
//
// where stamp is the creation time (2026-12-01T22-57, or milliseconds for
// a session imported from a file). The first line of the file is the
// session's metadata ({"sessionId": …, "projectHash": …}); every further
// line a message. It is restored under the same name.
var layout = packer.OneFile{Match: isSessionPath, Find: findSessions}

var sessionName = regexp.MustCompile(`^session-[0-9][0-9T-]*-([A-Za-z0-9_-]{8})\.jsonl$`)

// isSessionFile reports whether name is Gemini CLI's file name for session
// id. The name holds only the id's first 8 characters, as Gemini CLI's own
// lookup does; the executor checks the full id inside (sessionFile).
func isSessionFile(name, id string) bool {
	m := sessionName.FindStringSubmatch(name)
	return m != nil && len(id) >= 8 && m[1] == id[:8]
}

// isSessionPath reports whether rel is ChatsDir/<session file of id>.
func isSessionPath(rel, id string) bool {
	dir, file := path.Split(rel)
	return strings.TrimSuffix(dir, "/") == ChatsDir && isSessionFile(file, id)
}

// findSessions lists the pinned project's chats directory.
func findSessions(root *os.Root, _ string) ([]string, error) {
	ents, err := packer.ReadDir(root, ChatsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, path.Join(ChatsDir, e.Name()))
	}
	return out, err
}
