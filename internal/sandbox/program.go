package sandbox

import (
	"errors"
	"fmt"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrProgram is a program a confined process may not run: named through
// "..", or lying, once every link on its way is followed, outside every
// place a confined program may come from (see Program).
var ErrProgram = errors.New("sandbox: the program is not one a confined process may run")

// Program is the path a confined process of policy p runs for name, found
// the way the sandbox will see it, and refused unless it may run there.
//
// A name with a slash is that path (a relative one is taken from p.Dir); a
// bare name is looked up in binDir when it is set, else in the PATH of env,
// where a directory the sandbox does not show is passed over as the
// sandbox's own lookup would pass over it (a version manager's shims in a
// home directory, say). Either way the path's text is never trusted: any
// ".." in it is refused (the kernel resolves ".." after the links before
// it, not lexically), and the file it leads to, every link followed, must
// be a regular, executable file below one of the places a program may come
// from: the system paths, the sandbox's extra paths (TETHER_SANDBOX_RO and
// _RW), the agent CLIs' installation (Config.CLIBin), the directory the
// process runs in (p.Dir, the run's workspace) or a path p gives it to
// read (p.RO: an agent's CLI installation). Nothing else of where it lies
// is given to the process: Launch binds the installation for a program
// there, and nothing for the others, which the sandbox shows already.
//
// A missing program wraps fs.ErrNotExist; a refused one, ErrProgram.
func (s *Sandbox) Program(p Policy, name, binDir string, env []string) (string, error) {
	if hasDotDot(name) {
		return "", fmt.Errorf("%w: %q climbs with \"..\", which the kernel resolves after the links before it rather than as the text reads; name the program by a path without \"..\"", ErrProgram, name)
	}
	if strings.ContainsRune(name, '/') || binDir != "" {
		path := name
		switch {
		case !strings.ContainsRune(name, '/'):
			path = filepath.Join(binDir, name)
		case !filepath.IsAbs(name):
			if p.Dir == "" {
				return "", fmt.Errorf("%w: %q is relative, and the process has no directory to find it from", ErrProgram, name)
			}
			path = filepath.Join(p.Dir, name)
		}
		if _, err := s.programFile(p, path); err != nil {
			return "", err
		}
		return path, nil
	}
	var refused error
	for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
		if !filepath.IsAbs(dir) || hasDotDot(dir) {
			continue
		}
		path := filepath.Join(dir, name)
		_, err := s.programFile(p, path)
		switch {
		case err == nil:
			return path, nil
		case errors.Is(err, ErrProgram) && refused == nil:
			refused = err
		}
	}
	if refused != nil {
		return "", refused
	}
	return "", fmt.Errorf("%q is in no directory of PATH a confined process sees: %w", name, fs.ErrNotExist)
}

// programFile checks that path leads to a program a process of p may run,
// and says what Launch must bind for it: nothing when the sandbox shows
// the file already (in a system path, the sandbox's extra paths, the
// process's directory, or a path p gives it to read), or the agent CLIs'
// installation, as an agent is given it (see CLIBinReadable), for a
// program there.
func (s *Sandbox) programFile(p Policy, path string) (binds []string, err error) {
	if !filepath.IsAbs(path) || hasDotDot(path) {
		return nil, fmt.Errorf("%w: %q: want an absolute path without \"..\"", ErrProgram, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not an executable file: %w", path, fs.ErrNotExist)
	}
	switch {
	case underAny(real, slices.Concat(confine.SystemPaths, s.RO, s.RW, []string{p.Dir}, p.RO)):
		return nil, nil
	case underAny(real, s.cli):
		return s.cli, nil
	}
	where := path
	if real != path {
		where = fmt.Sprintf("%s (which leads to %s)", path, real)
	}
	return nil, fmt.Errorf("%w: %s lies outside the system directories (%s), the agent CLIs' installation (TETHER_CLI_BIN), the worker's TETHER_SANDBOX_RO and TETHER_SANDBOX_RW and the process's own directory; install it under a system directory, or add its directory to TETHER_SANDBOX_RO on the worker",
		ErrProgram, where, strings.Join(confine.SystemPaths, " "))
}

// underAny reports whether the real path p lies in one of dirs, each
// taken with every link in it followed.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) || hasDotDot(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || real == "/" {
			continue
		}
		if within(p, real) {
			return true
		}
	}
	return false
}

// hasDotDot reports whether the path's text holds a ".." element.
func hasDotDot(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// envValue is the last value env (NAME=value entries) gives name.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}
