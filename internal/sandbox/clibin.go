package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrCLIBinInHome is a CLI bin directory inside a home directory.
var ErrCLIBinInHome = errors.New("sandbox: the agent CLIs' bin directory is inside a home directory")

// CLIBinReadable is what a confined process may read of the agent CLIs'
// bin directory (TETHER_CLI_BIN): the directory itself, and where each of
// its links leads. A link into an npm tree (node_modules) opens that whole
// tree, where the package's dependencies are hoisted; any other link opens
// only its target. Never the directory's parent, which holds other tools'
// files (with the CLIs in ~/.local/bin, ~/.local/share/*/auth.json).
func CLIBinReadable(binDir string) []string {
	binDir = filepath.Clean(binDir)
	out := []string{binDir}
	ents, err := os.ReadDir(binDir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(binDir, e.Name()))
		if err != nil {
			continue
		}
		if nm := outermostNodeModules(target); nm != "" {
			target = nm
		}
		if !slices.Contains(out, target) {
			out = append(out, target)
		}
	}
	return out
}

// outermostNodeModules is the outermost directory named node_modules
// that holds p, or "".
func outermostNodeModules(p string) string {
	parts := strings.Split(p, string(filepath.Separator))
	for i, part := range parts {
		if part == "node_modules" {
			return string(filepath.Separator) + filepath.Join(parts[:i+1]...)
		}
	}
	return ""
}

// CheckCLIBin refuses a CLI bin directory inside a home directory (the
// worker's HOME, its user's home, /root, /home): a confined agent reads
// the bin directory, and a home holds other tools' credentials beside it.
func CheckCLIBin(binDir string) error {
	if binDir == "" {
		return nil
	}
	paths := []string{filepath.Clean(binDir)}
	if real, err := filepath.EvalSymlinks(binDir); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	for _, home := range homes() {
		for _, p := range paths {
			if p == home || strings.HasPrefix(p, home+string(filepath.Separator)) {
				return fmt.Errorf("%w: TETHER_CLI_BIN=%s is inside the home directory %s, and a confined agent may read the bin directory and where its links lead, so it would sit beside that home's credentials (such as ~/.local/share/opencode/auth.json); install the CLIs outside any home (e.g. npm install --prefix /opt/tether-clis ...) and set TETHER_CLI_BIN to that bin directory",
					ErrCLIBinInHome, binDir, home)
			}
		}
	}
	return nil
}

// homes are the home directories a CLI bin directory must not be in.
func homes() []string {
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if p == "/" || slices.Contains(out, p) {
			return
		}
		out = append(out, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p && !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	add(os.Getenv("HOME"))
	add(passwdHome(os.Getuid()))
	add("/root")
	add("/home")
	return out
}

// passwdHome is uid's home directory in /etc/passwd, or "".
func passwdHome(uid int) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && fields[2] == strconv.Itoa(uid) {
			return fields[5]
		}
	}
	return ""
}

// ErrExposed is a secret file of the worker inside a path a confined
// process may read.
var ErrExposed = errors.New("sandbox: a secret of the worker lies where a confined process can read it")

// CheckOutside refuses file (a secret of the worker's: the Temporal client
// key) when it lies in a path every confined process may read (the system
// paths, /etc, TETHER_SANDBOX_RW and _RO) or in one of dirs (the worker's
// work and state directories, the CLIs' installation). An empty file is
// fine.
func (s *Sandbox) CheckOutside(what, file string, dirs ...string) error {
	if s == nil || file == "" {
		return nil
	}
	paths := []string{filepath.Clean(file)}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		paths = append(paths, real)
	}
	for _, d := range append(append(append(append([]string{}, confine.SystemPaths...), "/etc"), append(s.RW, s.RO...)...), dirs...) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		for _, p := range paths {
			if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
				return fmt.Errorf("%w: %s=%s is inside %s, which confined agents and tools may read; keep it outside every path they are given (docs/security.md)", ErrExposed, what, file, d)
			}
		}
	}
	return nil
}
