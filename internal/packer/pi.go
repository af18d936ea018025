package packer

import (
	"errors"
	"io/fs"
	"os"
	"regexp"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
)

// NewPi returns the packer of pi sessions in env: the state root is the flat
// directory pi runs with --session-dir, and a session is the one file pi
// names there
//
//	<timestamp>_<id>.jsonl
//
// where timestamp is the session's creation time as an ISO string with ':'
// and '.' replaced by '-' (2026-11-30T12-27-00-123Z) and id is the session's
// uuid (pi 0.73.1, SessionManager.newSession). It is restored under the same
// name.
func NewPi(env agent.Env, limits Limits, opts ...Option) *Packer {
	return newPacker(backend.Pi, env, limits, piLayout{}, opts)
}

type piLayout struct{}

var piStamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{3}Z_`)

// isPiSession reports whether name is pi's file name for session id.
func isPiSession(name, id string) bool {
	loc := piStamp.FindStringIndex(name)
	return loc != nil && name[loc[1]:] == id+".jsonl"
}

func (piLayout) live(root *os.Root, _ agent.Env, id string) ([]Place, error) {
	ents, err := readDir(root, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Place
	for _, e := range ents {
		if isPiSession(e.Name(), id) {
			out = append(out, Place{Name: e.Name(), Path: e.Name(), Primary: true})
		}
	}
	return out, nil
}

func (piLayout) resolver(_ agent.Env, id string) (func(string) (Place, bool), error) {
	return func(name string) (Place, bool) {
		if !isPiSession(name, id) {
			return Place{}, false
		}
		return Place{Name: name, Path: name, Primary: true}, true
	}, nil
}

func (piLayout) workdir(env agent.Env) string { return env.Workdir }
