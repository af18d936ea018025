package packer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Packer packs, unpacks and finds one backend's sessions in one live env.
// It implements agent.SessionPacker.
type Packer struct {
	backend string
	env     agent.Env
	limits  Limits
	layout  Layout
	redact  RedactMode
	policy  *treepolicy.Policy
	log     *slog.Logger
}

// Option changes how a packer works.
type Option func(*Packer)

// WithRedact sets what packing does with a secret-looking token in a
// session file (default RedactDetect).
func WithRedact(m RedactMode) Option {
	return func(p *Packer) { p.redact = m }
}

// withLogger sends the packer's warnings to l instead of slog.Default()
// (for tests: a worker's packers warn through its default logger).
func withLogger(l *slog.Logger) Option {
	return func(p *Packer) { p.log = l }
}

var _ agent.SessionPacker = (*Packer)(nil)

// New returns the packer of backendName's sessions in env, laid out as l
// says. backendName is written into every archive's header and checked
// against it on unpack.
func New(backendName string, env agent.Env, limits Limits, l Layout, opts ...Option) *Packer {
	p := &Packer{backend: backendName, env: env, limits: withDefaults(limits), layout: l}
	for _, o := range opts {
		o(p)
	}
	if p.policy == nil {
		p.policy = basePolicy()
	}
	return p
}

func (p *Packer) logger() *slog.Logger {
	if p.log != nil {
		return p.log
	}
	return slog.Default()
}

// Backend returns the backend name written into and checked against archive
// headers.
func (p *Packer) Backend() string { return p.backend }

// HasSession reports whether the session's main file is present, as a
// regular file, where the CLI will look for it when run in the packer's env.
// Anything it cannot read counts as absent.
func (p *Packer) HasSession(ctx context.Context, sessionID string) bool {
	_, err := p.SessionFile(ctx, sessionID)
	return err == nil
}

// SessionFile returns the absolute path of the session's main file in the
// live env (the transcript or rollout the CLI resumes from), or an error
// wrapping ErrNoSession when there is none. Executors that hand the CLI a
// file path use it, so they find exactly what HasSession found.
func (p *Packer) SessionFile(ctx context.Context, sessionID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := p.check(sessionID); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(p.env.StateRoot)
	if err != nil {
		return "", p.noSession(sessionID, err)
	}
	defer root.Close()
	parts, err := p.findLive(root, sessionID)
	if err != nil {
		return "", err
	}
	for _, pl := range parts {
		if pl.Primary {
			return filepath.Join(p.env.StateRoot, filepath.FromSlash(pl.Path)), nil
		}
	}
	return "", p.noSession(sessionID, nil)
}

// check refuses an unsafe session id, an id the backend's CLI reserves,
// and a packer without a state root (which would otherwise resolve against
// the process's cwd).
func (p *Packer) check(id string) error {
	if p.env.StateRoot == "" {
		return fmt.Errorf("packer: %s packer has no state root", p.backend)
	}
	if err := checkID(id); err != nil {
		return err
	}
	if c, ok := p.layout.(IDChecker); ok {
		return c.CheckID(id)
	}
	return nil
}

func (p *Packer) noSession(id string, cause error) error {
	if cause != nil && !errors.Is(cause, fs.ErrNotExist) {
		return fmt.Errorf("%s session %s in %s: %w", p.backend, id, p.env.StateRoot, cause)
	}
	return fmt.Errorf("%w: %s session %s is not in %s (working directory %s)", ErrNoSession, p.backend, id, p.env.StateRoot, p.env.Workdir)
}

// findLive returns the session's parts that exist in root, checked: no part
// and no directory on the way to it may be a link or a special file.
func (p *Packer) findLive(root *os.Root, id string) ([]Place, error) {
	cands, err := p.layout.Live(root, p.env, id)
	if err != nil {
		return nil, err
	}
	var found []Place
	for _, pl := range cands {
		if p.denied(pl.Name) || p.denied(pl.Path) {
			continue
		}
		fi, err := lstatInRoot(root, pl.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := checkType(pl, fi); err != nil {
			return nil, err
		}
		if err := singleLink(pl.Path, fi); err != nil {
			return nil, err
		}
		found = append(found, pl)
	}
	return found, nil
}

// checkType accepts a regular file for a file part and a directory for a
// directory part.
func checkType(pl Place, fi fs.FileInfo) error {
	m := fi.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink; session files must be plain files", ErrLinkEntry, pl.Path)
	case pl.Dir && m.IsDir(), !pl.Dir && m.IsRegular():
		return nil
	case m.IsDir() || m.IsRegular():
		return fmt.Errorf("%w: %s is a %s, the session needs a %s there", ErrExists, pl.Path, treepolicy.Kind(m), treepolicy.Kind(placeMode(pl)))
	default:
		return fmt.Errorf("%w: %s is a %s", ErrSpecialEntry, pl.Path, treepolicy.Kind(m))
	}
}

// singleLink refuses a regular file with more than one hard link: its
// bytes are also another file's, perhaps a credential's, under an innocent
// name. A copy is its own file.
func singleLink(rel string, fi fs.FileInfo) error {
	if n := linkCount(fi); fi.Mode().IsRegular() && n > 1 {
		return fmt.Errorf("%w: %s has %d links; a session file must not share its bytes with another file (copy it to break the link)", ErrHardLink, rel, n)
	}
	return nil
}

func placeMode(pl Place) fs.FileMode {
	if pl.Dir {
		return fs.ModeDir
	}
	return 0
}

// lstatInRoot lstats rel (slash-separated) in root without following any
// link: every directory on the way must be a real directory.
func lstatInRoot(root *os.Root, rel string) (fs.FileInfo, error) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := path.Join(parts[:i]...)
		fi, err := root.Lstat(dir)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s is a symlink on the way to %s; session paths must not go through links", ErrLinkEntry, dir, rel)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s on the way to %s is not a directory: %w", dir, rel, fs.ErrNotExist)
		}
	}
	return root.Lstat(rel)
}
