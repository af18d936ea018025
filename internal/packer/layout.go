package packer

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/tether-run/tether/internal/agent"
)

// Place is one part of a session: a file, or a directory tree whose regular
// files all belong to the session.
type Place struct {
	// Name is the part's name inside archives: a clean, relative,
	// slash-separated path that does not depend on the machine (no slug,
	// no absolute path), so an archive unpacks anywhere.
	Name string
	// Path is where the part lives, relative to the state root,
	// slash-separated.
	Path string
	// Dir marks a directory tree.
	Dir bool
	// Primary marks the file whose presence means the session exists. Unpack
	// renames it into place last; HasSession looks for it.
	Primary bool
}

// Layout is one backend's knowledge of where a session lives. Each backend
// implements it in its own package; the packer derives pack, unpack and
// HasSession from it alike, so they cannot disagree about paths. A layout
// only names places: the packer checks every entry, link and path itself,
// whatever the layout says.
type Layout interface {
	// Live lists where the session's parts may be in root, for pack,
	// HasSession and the removal of stale parts on unpack. The packer
	// checks which exist.
	Live(root *os.Root, env agent.Env, id string) ([]Place, error)
	// Resolver returns a function mapping an archive entry name to the part
	// of the session it belongs to, placed for env, or false when the name
	// is not whitelisted.
	Resolver(env agent.Env, id string) (func(name string) (Place, bool), error)
	// Workdir returns the working directory recorded in headers.
	Workdir(env agent.Env) string
}

// IDChecker is implemented by a Layout whose CLI reserves some names where
// session ids go: CheckID refuses them, wrapping ErrReservedID.
type IDChecker interface {
	CheckID(id string) error
}

// Files is a Layout whose places are a function of the env and the session
// id alone: at least one Primary file; Dir parts take every regular file
// beneath them. A layout that would itself be unsafe (a place that is not
// a clean relative path, no primary file) is refused.
type Files func(env agent.Env, sessionID string) ([]Place, error)

// Live lists the places, checked.
func (f Files) Live(_ *os.Root, env agent.Env, id string) ([]Place, error) {
	ps, err := f(env, id)
	if err != nil {
		return nil, err
	}
	if err := checkPlaces(ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// Resolver maps an entry name to the place that is or holds it.
func (f Files) Resolver(env agent.Env, id string) (func(string) (Place, bool), error) {
	ps, err := f.Live(nil, env, id)
	if err != nil {
		return nil, err
	}
	return func(name string) (Place, bool) {
		for _, p := range ps {
			if name == p.Name || (p.Dir && strings.HasPrefix(name, p.Name+"/")) {
				return p, true
			}
		}
		return Place{}, false
	}, nil
}

// Workdir is the env's working directory.
func (Files) Workdir(env agent.Env) string { return env.Workdir }

// OneFile is the Layout of a session that is a single file, kept under
// the same path below the state root on every machine: Match says whether
// rel (slash-separated, relative to the root) is session id's file, and
// Find lists the paths in a live root that may be; Match has the last word
// on both.
type OneFile struct {
	Match func(rel, id string) bool
	Find  func(root *os.Root, id string) ([]string, error)
}

// Live lists the paths Find found that Match accepts.
func (l OneFile) Live(root *os.Root, _ agent.Env, id string) ([]Place, error) {
	rels, err := l.Find(root, id)
	if err != nil {
		return nil, err
	}
	var out []Place
	for _, rel := range rels {
		if l.Match(rel, id) {
			out = append(out, Place{Name: rel, Path: rel, Primary: true})
		}
	}
	return out, nil
}

// Resolver accepts exactly the names Match accepts.
func (l OneFile) Resolver(_ agent.Env, id string) (func(string) (Place, bool), error) {
	return func(name string) (Place, bool) {
		if !l.Match(name, id) {
			return Place{}, false
		}
		return Place{Name: name, Path: name, Primary: true}, true
	}, nil
}

// Workdir is the env's: the session file records its own.
func (OneFile) Workdir(env agent.Env) string { return env.Workdir }

// ReadDir lists dir in root, sorted by name; entries come from the
// directory itself, so links are reported as links, never followed. It is
// for layouts that search a directory for a session's file.
func ReadDir(root *os.Root, dir string) ([]fs.DirEntry, error) {
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

// checkPlaces rejects a layout that would itself be unsafe.
func checkPlaces(ps []Place) error {
	primary := 0
	for _, p := range ps {
		for _, s := range []string{p.Name, p.Path} {
			if err := checkRel(s); err != nil {
				return fmt.Errorf("packer: layout place %q: %w", s, err)
			}
		}
		if p.Primary {
			if p.Dir {
				return fmt.Errorf("packer: layout place %q: the primary part must be a file", p.Name)
			}
			primary++
		}
	}
	if primary == 0 {
		return fmt.Errorf("packer: layout has no primary part")
	}
	return nil
}

// checkRel accepts a clean, relative, slash-separated path that stays below
// its base: no "..", no ".", no empty or absolute path, no backslash or NUL.
func checkRel(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%w: empty path", ErrUnsafePath)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: %q is absolute", ErrUnsafePath, p)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("%w: %q holds a backslash or NUL", ErrUnsafePath, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%w: %q is not a clean path", ErrUnsafePath, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Errorf("%w: %q climbs out of its directory", ErrUnsafePath, p)
		}
	}
	return nil
}

// Its length is checked apart: a counted repetition costs a
// millisecond to compile at every start of tether and the worker.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkID accepts the session ids the CLIs mint (UUIDs) and anything else
// that is safe as one path component.
func checkID(id string) error {
	if len(id) > 128 || !idPattern.MatchString(id) {
		return fmt.Errorf("%w: session id %q is not a plain id (letters, digits, '.', '_', '-'; at most 128)", ErrUnsafePath, id)
	}
	return nil
}
