package packer

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
)

// NewCodex returns the packer of Codex sessions in env: the state root is
// CODEX_HOME, and a session is its rollout file
//
//	sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl
//
// found by its id in any date directory, and restored under the same
// relative path. The rollout records the working directory inside; Codex
// resumes from the rollout alone.
func NewCodex(env agent.Env, limits Limits, opts ...Option) *Packer {
	return newPacker(backend.Codex, env, limits, codexLayout{}, opts)
}

type codexLayout struct{}

var (
	codexYear    = regexp.MustCompile(`^[0-9]{4}$`)
	codexMonthDy = regexp.MustCompile(`^[0-9]{2}$`)
	codexStamp   = regexp.MustCompile(`^rollout-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-`)
)

// isRollout reports whether file is the rollout file name of session id.
func isRollout(file, id string) bool {
	loc := codexStamp.FindStringIndex(file)
	return loc != nil && file[loc[1]:] == id+".jsonl"
}

// isRolloutPath reports whether rel is sessions/YYYY/MM/DD/<rollout of id>.
func isRolloutPath(rel, id string) bool {
	c := strings.Split(rel, "/")
	return len(c) == 5 && c[0] == "sessions" && codexYear.MatchString(c[1]) &&
		codexMonthDy.MatchString(c[2]) && codexMonthDy.MatchString(c[3]) && isRollout(c[4], id)
}

// live searches every date directory for the session's rollout. A date
// directory that is a link or not a directory is skipped, as it cannot hold
// a rollout Tether would pack.
func (codexLayout) live(root *os.Root, _ agent.Env, id string) ([]Place, error) {
	var out []Place
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := readDir(root, dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			rel := path.Join(dir, e.Name())
			if depth < 3 {
				if e.IsDir() && (depth == 0 && codexYear.MatchString(e.Name()) || depth > 0 && codexMonthDy.MatchString(e.Name())) {
					if err := walk(rel, depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if isRolloutPath(rel, id) {
				out = append(out, Place{Name: rel, Path: rel, Primary: true})
			}
		}
		return nil
	}
	if fi, err := root.Lstat("sessions"); err != nil || !fi.IsDir() {
		return nil, nil
	}
	return out, walk("sessions", 0)
}

func (codexLayout) resolver(_ agent.Env, id string) (func(string) (Place, bool), error) {
	return func(name string) (Place, bool) {
		if !isRolloutPath(name, id) {
			return Place{}, false
		}
		return Place{Name: name, Path: name, Primary: true}, true
	}, nil
}

func (codexLayout) workdir(env agent.Env) string { return env.Workdir }

// readDir lists dir in root, sorted by name; entries come from the
// directory itself, so links are reported as links, never followed.
func readDir(root *os.Root, dir string) ([]fs.DirEntry, error) {
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}
