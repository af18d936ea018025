package codex

import (
	"errors"
	"io/fs"
	"os"
	"path"

	"github.com/tether-run/tether/internal/backend/codex/session"
	"github.com/tether-run/tether/internal/packer"
)

// layout is where Codex keeps a session in env: the state root is
// CODEX_HOME, and a session is its rollout file
//
//	sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl
//
// found by its id in any date directory, and restored under the same
// relative path. The rollout records the working directory inside; Codex
// resumes from the rollout alone.
var layout = packer.OneFile{Match: isRolloutPath, Find: findRollouts}

// isRolloutPath reports whether rel is sessions/YYYY/MM/DD/<rollout of id>
// (the session leaf's name rules, which the console reads archives with).
var isRolloutPath = session.IsRolloutPath

// findRollouts lists the files of every date directory. A date directory
// that is a link or not a directory is skipped, as it cannot hold a
// rollout Tether would pack.
func findRollouts(root *os.Root, _ string) ([]string, error) {
	var out []string
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := packer.ReadDir(root, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			rel := path.Join(dir, e.Name())
			switch {
			case depth == 3:
				out = append(out, rel)
			case e.IsDir() && (depth == 0 && session.YearDir(e.Name()) || depth > 0 && session.MonthDayDir(e.Name())):
				if err := walk(rel, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if fi, err := root.Lstat("sessions"); err != nil || !fi.IsDir() {
		return nil, nil
	}
	return out, walk("sessions", 0)
}
