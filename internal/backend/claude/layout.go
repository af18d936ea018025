package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/claude/session"
	"github.com/tether-run/tether/internal/packer"
)

// sessionLayout is where Claude Code keeps a session in env: the state
// root is CLAUDE_CONFIG_DIR, the working directory selects the project slug.
// A session is
//
//	projects/<slug>/<id>.jsonl   the transcript (main file)
//	projects/<slug>/<id>/        subagent transcripts and tool results
//	tasks/<id>/                  the session's task list
//
// Archives name the project parts "project/<id>.jsonl" and "project/<id>/",
// without a slug, so unpacking places them under the slug of the target
// env's working directory.
var sessionLayout = layout{packer.Files(places)}

// layout is Claude Code's: fixed places for an env and id, a working
// directory as the CLI sees it, and session ids the CLI reserves.
type layout struct{ packer.Files }

// Workdir records the directory the slug was computed from.
func (layout) Workdir(env agent.Env) string {
	if dir, err := workdirOf(env.Workdir); err == nil {
		return dir
	}
	return env.Workdir
}

// Names Claude Code keeps for itself in a project folder, beside the
// session files, and refuses as session ids (CLI 2.1.332: "are reserved:
// they name project-level entries, not sessions"). A session id "memory"
// would otherwise make projects/<slug>/memory/, the user's memory, a part
// of that session. The CLI compares them in lower case, with trailing dots
// and spaces removed.
var (
	reservedNames = map[string]bool{
		"memory": true, "tiny_memory": true, "bagel": true, "cloud-snapshots": true,
		"connector-downloads": true, "bridge-pointer.json": true, ".session-aliases": true,
	}
	// Suffixes that name a session's sibling files or streams.
	reservedSuffixes = []string{".jsonl", ".cast", ".ccr-tip.json", ".precompact.json", ".dir-sync.json"}
)

// CheckID refuses a session id Claude Code reserves in the project folder.
func (layout) CheckID(id string) error {
	n := strings.TrimRight(strings.ToLower(id), ". ")
	reserved := reservedNames[n]
	for _, s := range reservedSuffixes {
		reserved = reserved || strings.HasSuffix(n, s)
	}
	if reserved {
		return fmt.Errorf("%w: %q names one of Claude Code's own entries in the project folder (memory/, tiny_memory/, *.jsonl, ...), not a session", packer.ErrReservedID, id)
	}
	return nil
}

func places(env agent.Env, id string) ([]packer.Place, error) {
	dir, err := workdirOf(env.Workdir)
	if err != nil {
		return nil, err
	}
	proj := "projects/" + projectSlug(dir) + "/"
	return []packer.Place{
		{Name: session.TranscriptName(id), Path: proj + id + ".jsonl", Primary: true},
		{Name: session.FolderName(id), Path: proj + id, Dir: true},
		{Name: session.TasksName(id), Path: "tasks/" + id, Dir: true},
	}, nil
}

// workdirOf returns working directory dir as Claude Code sees it: the
// process's getcwd, absolute with symlinks resolved. Parts of dir that do
// not exist yet are kept as written below the deepest existing ancestor.
func workdirOf(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("claude_code: Claude Code needs a working directory to find its project")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
