package codex

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

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

var (
	yearDir      = regexp.MustCompile(`^[0-9]{4}$`)
	monthDayDir  = regexp.MustCompile(`^[0-9]{2}$`)
	rolloutStamp = regexp.MustCompile(`^rollout-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-`)
)

// isRollout reports whether file is the rollout file name of session id.
func isRollout(file, id string) bool {
	loc := rolloutStamp.FindStringIndex(file)
	return loc != nil && file[loc[1]:] == id+".jsonl"
}

// isRolloutPath reports whether rel is sessions/YYYY/MM/DD/<rollout of id>.
func isRolloutPath(rel, id string) bool {
	c := strings.Split(rel, "/")
	return len(c) == 5 && c[0] == "sessions" && yearDir.MatchString(c[1]) &&
		monthDayDir.MatchString(c[2]) && monthDayDir.MatchString(c[3]) && isRollout(c[4], id)
}

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
			case e.IsDir() && (depth == 0 && yearDir.MatchString(e.Name()) || depth > 0 && monthDayDir.MatchString(e.Name())):
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
