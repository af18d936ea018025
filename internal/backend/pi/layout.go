package pi

import (
	"errors"
	"io/fs"
	"os"
	"regexp"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
)

// newPacker returns the packer of pi sessions in env: the state root is the flat
// directory pi runs with --session-dir, and a session is the one file pi
// names there
//
//	<timestamp>_<id>.jsonl
//
// where timestamp is the session's creation time as an ISO string with ':'
// and '.' replaced by '-' (2026-11-30T12-27-00-123Z) and id is the session's
// uuid (pi 0.73.1, SessionManager.newSession). It is restored under the same
// name.
func newPacker(env agent.Env, limits packer.Limits, opts ...packer.Option) *packer.Packer {
	return packer.New(Name, env, limits, layout{}, opts...)
}

// layout finds a session's file by its id in the flat session directory.
type layout struct{}

var sessionStamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{3}Z_`)

// isSessionFile reports whether name is pi's file name for session id.
func isSessionFile(name, id string) bool {
	loc := sessionStamp.FindStringIndex(name)
	return loc != nil && name[loc[1]:] == id+".jsonl"
}

// Live lists the session's file, when it is there.
func (layout) Live(root *os.Root, _ agent.Env, id string) ([]packer.Place, error) {
	ents, err := packer.ReadDir(root, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []packer.Place
	for _, e := range ents {
		if isSessionFile(e.Name(), id) {
			out = append(out, packer.Place{Name: e.Name(), Path: e.Name(), Primary: true})
		}
	}
	return out, nil
}

// Resolver accepts exactly the session's file name.
func (layout) Resolver(_ agent.Env, id string) (func(string) (packer.Place, bool), error) {
	return func(name string) (packer.Place, bool) {
		if !isSessionFile(name, id) {
			return packer.Place{}, false
		}
		return packer.Place{Name: name, Path: name, Primary: true}, true
	}, nil
}

// Workdir is the env's: pi records its own in the session.
func (layout) Workdir(env agent.Env) string { return env.Workdir }
