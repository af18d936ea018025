package gemini

import (
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/gemini/session"
	"github.com/tether-run/tether/internal/packer"
)

// ProjectSlug and ChatsDir are where Gemini CLI keeps the sessions of
// the project every working directory is pinned to (see pinProject); the
// session leaf names them, which the console reads archives with.
const (
	ProjectSlug = session.ProjectSlug
	ChatsDir    = session.ChatsDir
)

// layout is where Gemini CLI keeps a session in env: the state root
// is GEMINI_CLI_HOME, and a session is the one JSONL file Gemini CLI names
//
//	.gemini/tmp/tether/chats/session-<stamp>-<first 8 characters of id>.jsonl
//
// where stamp is the creation time (2026-12-01T22-57, or milliseconds for
// a session imported from a file). The first line of the file is the
// session's metadata ({"sessionId": …, "projectHash": …}); every further
// line a message. It is restored under the same name.
var layout = packer.OneFile{Match: session.IsPath, Find: cliexec.FilesIn(ChatsDir)}
