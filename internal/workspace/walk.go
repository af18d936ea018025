package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/treepolicy"
)

// fileInfo is one file of a workspace as found on disk.
type fileInfo struct {
	path  string // relative, slash-separated
	mode  filemode.FileMode
	size  int64
	mtime int64 // unix nanoseconds
	ctime int64
	ino   uint64
	dev   uint64
	nlink uint64
	link  string // a symlink's target
}

// scanned is what a walk of a workspace found.
type scanned struct {
	files []fileInfo // sorted by path
	bytes int64
	// notes say what was left out and why (a symlink leaving the
	// workspace, a fifo, a credential file); dropped counts the notes
	// over maxNotes.
	notes   []string
	dropped int
	// log, if set, gets every note, those over maxNotes too.
	log func(note string)
}

// scanOpts tune a walk.
type scanOpts struct {
	lim Limits
	// tracked reports whether a path was in the previous snapshot: like
	// git, a .gitignore keeps only untracked files out.
	tracked func(rel string) bool
	// trackedDir reports whether a directory holds tracked files.
	trackedDir func(rel string) bool
	// credential decides what becomes of a credential-shaped file the
	// previous snapshot does not hold (treepolicy.Secret) and of a login
	// file (treepolicy.Login): nil leaves it out silently, as a restore's
	// walk does; a snapshot returns the note to keep, or fails under TETHER_REDACT=refuse.
	credential func(rel string, c treepolicy.Class, rule string) (note string, err error)
	// log gets every note as it is made (the notes kept are capped).
	log func(note string)
	// fromSource keeps credential-shaped files: the walk reads the run's
	// source, whose files are by definition tracked by it.
	fromSource bool
}

// maxNotes caps the notes one walk keeps.
const maxNotes = 200

// scanTree walks the workspace at root without following links and
// returns the files a snapshot holds. It fails with ErrTooLarge when the
// workspace is over the limits, and with the error of any directory it
// cannot read (a fault is never taken for absence).
func scanTree(ctx context.Context, root string, o scanOpts) (*scanned, error) {
	o.lim = withDefaults(o.lim)
	if o.tracked == nil {
		o.tracked = func(string) bool { return false }
	}
	if o.trackedDir == nil {
		o.trackedDir = func(string) bool { return false }
	}
	w := &walker{ctx: ctx, root: root, o: o, out: &scanned{log: o.log}, links: map[[2]uint64]uint64{}}
	if err := w.dir(nil, "", 0, nil); err != nil {
		return nil, err
	}
	w.dropOutsideLinks()
	return w.out, nil
}

// dropOutsideLinks leaves out every file with more hard links than the
// walk found inside the workspace: its other names lie outside (a link to
// a 0600 file of the worker's is a regular file whose bytes are that
// file's), so its content is never read.
func (w *walker) dropOutsideLinks() {
	kept := w.out.files[:0]
	for _, f := range w.out.files {
		if f.nlink > 1 && w.links[[2]uint64{f.dev, f.ino}] < f.nlink {
			w.note("%s: a hard link to a file with names outside the workspace (%d links); never read, not snapshotted", f.path, f.nlink)
			w.out.bytes -= f.size
			continue
		}
		kept = append(kept, f)
	}
	w.out.files = kept
}

type walker struct {
	ctx   context.Context
	root  string
	o     scanOpts
	out   *scanned
	dirs  int
	steps int
	// links counts, per multiply-linked file (device, inode), the names
	// the walk found for it.
	links map[[2]uint64]uint64
}

func (w *walker) note(format string, args ...any) { w.out.note(format, args...) }

func (s *scanned) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if s.log != nil {
		s.log(n)
	}
	if len(s.notes) < maxNotes {
		s.notes = append(s.notes, n)
		return
	}
	s.dropped++
}

// allNotes are the notes, with a count of those over maxNotes.
func (s *scanned) allNotes() []string {
	if s.dropped == 0 {
		return s.notes
	}
	return append(s.notes, fmt.Sprintf("… and %d more left out (the worker's log names each)", s.dropped))
}

func (w *walker) dir(parent *os.File, rel string, depth int, patterns []gitignore.Pattern) error {
	d, err := openDir(parent, w.root, rel)
	if err != nil {
		return fmt.Errorf("workspace: read directory %s: %w", orDot(rel), err)
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("workspace: read directory %s: %w", orDot(rel), err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	fd := int(d.Fd())
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	var domain []string
	if rel != "" {
		domain = strings.Split(rel, "/")
	}
	for _, de := range des {
		if de.Name() == ".gitignore" && de.Type().IsRegular() {
			ps, err := readIgnore(filepath.Join(abs, ".gitignore"), domain)
			if err != nil {
				return err
			}
			patterns = append(slices.Clip(patterns), ps...)
			break
		}
	}
	matcher := gitignore.NewMatcher(patterns)
	for _, de := range des {
		if w.steps++; w.steps%256 == 0 {
			if err := w.ctx.Err(); err != nil {
				return err
			}
		}
		name := de.Name()
		if strings.EqualFold(name, ".git") {
			continue // a repository's own metadata is never part of a snapshot
		}
		p := join(rel, name)
		if len(p) > w.o.lim.MaxPathBytes {
			return fmt.Errorf("%w: the path %.80s… is %d bytes, over the %d-byte limit (TETHER_WORKSPACE_MAX_PATH_BYTES)", ErrTooLarge, p, len(p), w.o.lim.MaxPathBytes)
		}
		isDir := de.IsDir()
		if len(patterns) > 0 && matcher.Match(append(slices.Clip(domain), name), isDir) {
			if isDir && !w.o.trackedDir(p) || !isDir && !w.o.tracked(p) {
				continue
			}
		}
		if c, rule := catalogue.Policy().Classify(p); c != treepolicy.Plain {
			switch {
			case c == treepolicy.Secret && w.o.fromSource:
				w.note("%s: a %s (%s), kept: it comes from the run's source", p, c, rule)
			case c == treepolicy.Secret && (isDir && w.o.trackedDir(p) || !isDir && w.o.tracked(p)):
				// The run's source tracked it: every snapshot since holds it.
			default:
				if w.o.credential != nil {
					n, err := w.o.credential(p, c, rule)
					if err != nil {
						return err
					}
					w.note("%s", n)
				}
				continue
			}
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while walking
			}
			return fmt.Errorf("workspace: %s: %w", p, &fs.PathError{Op: "lstat", Path: filepath.Join(abs, name), Err: err})
		}
		m := modeOf(&st)
		switch {
		case m.IsDir():
			if depth+1 > w.o.lim.MaxDepth {
				return fmt.Errorf("%w: %s is %d directories deep, over the limit of %d (TETHER_WORKSPACE_MAX_DEPTH)", ErrTooLarge, p, depth+1, w.o.lim.MaxDepth)
			}
			if w.dirs++; w.dirs > w.o.lim.MaxFiles {
				return fmt.Errorf("%w: more than %d directories (TETHER_WORKSPACE_MAX_FILES)", ErrTooLarge, w.o.lim.MaxFiles)
			}
			if err := w.dir(d, p, depth+1, patterns); err != nil {
				return err
			}
		case m.IsRegular():
			if st.Size > w.o.lim.MaxFileBytes {
				return fmt.Errorf("%w: %s is %d bytes, over the %d-byte single-file limit (TETHER_WORKSPACE_MAX_FILE_BYTES); add it to .gitignore or raise the limit", ErrTooLarge, p, st.Size, w.o.lim.MaxFileBytes)
			}
			mode := filemode.Regular
			if m&0o111 != 0 {
				mode = filemode.Executable
			}
			if err := w.add(fileInfo{path: p, mode: mode, size: st.Size}, &st); err != nil {
				return err
			}
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(abs, name))
			if err != nil {
				return fmt.Errorf("workspace: %s: %w", p, err)
			}
			if err := checkLink(p, target); err != nil {
				w.note("%s: a symlink to %q, which leaves the workspace; not snapshotted", p, target)
				continue
			}
			if err := w.add(fileInfo{path: p, mode: filemode.Symlink, size: int64(len(target)), link: target}, &st); err != nil {
				return err
			}
		default:
			w.note("%s: a %s, not snapshotted", p, treepolicy.Kind(m))
		}
	}
	return nil
}

func (w *walker) add(f fileInfo, st *unix.Stat_t) error {
	if len(w.out.files) >= w.o.lim.MaxFiles {
		return fmt.Errorf("%w: more than %d files (TETHER_WORKSPACE_MAX_FILES); add generated directories to .gitignore or raise the limit", ErrTooLarge, w.o.lim.MaxFiles)
	}
	if w.out.bytes += f.size; w.out.bytes > w.o.lim.MaxTotalBytes {
		return fmt.Errorf("%w: more than %d bytes of files (TETHER_WORKSPACE_MAX_BYTES); add generated directories to .gitignore or raise the limit", ErrTooLarge, w.o.lim.MaxTotalBytes)
	}
	f.mtime, f.ctime, f.ino = st.Mtim.Nano(), st.Ctim.Nano(), uint64(st.Ino)
	f.dev, f.nlink = uint64(st.Dev), uint64(st.Nlink)
	if f.mode != filemode.Symlink && f.nlink > 1 {
		w.links[[2]uint64{f.dev, f.ino}]++
	}
	w.out.files = append(w.out.files, f)
	return nil
}

// setStat records the stat data the index compares, as walker.add does
// from a raw stat.
func setStat(f *fileInfo, fi fs.FileInfo) {
	f.mtime = fi.ModTime().UnixNano()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.ino = st.Ino
		f.ctime = st.Ctim.Nano()
	}
}

// The walk visits each directory's entries in name order, which is not
// git's order for "a.b" against "a/"; sortFiles puts files in path order,
// which tree building and comparisons use.
func sortFiles(fs []fileInfo) {
	slices.SortFunc(fs, func(a, b fileInfo) int { return strings.Compare(a.path, b.path) })
}

func sortIndexFiles(fs []indexFile) {
	slices.SortFunc(fs, func(a, b indexFile) int { return strings.Compare(a.Path, b.Path) })
}

func sortTargets(ts []target) {
	slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.path, b.path) })
}

func readIgnore(p string, domain []string) ([]gitignore.Pattern, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", p, err)
	}
	return ps, nil
}

// checkLink accepts a symlink at rel whose target stays inside the
// workspace however it resolves: relative, and climbing ("..") only before
// its first named component, so no link it passes through can take it
// further up; and never into a .git directory.
func checkLink(rel, target string) error {
	if len(target) > maxLinkBytes {
		return fmt.Errorf("%w: %s points to a target of %d bytes, over the %d bytes a link can hold", ErrLink, rel, len(target), maxLinkBytes)
	}
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsAny(target, "\x00\\") {
		return fmt.Errorf("%w: %s points to %q", ErrLink, rel, target)
	}
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return fmt.Errorf("%w: %s points to %q, which climbs after a name", ErrLink, rel, target)
			}
		default:
			if strings.EqualFold(c, ".git") {
				return fmt.Errorf("%w: %s points into a .git directory", ErrLink, rel)
			}
			named = true
		}
	}
	full := path.Join(path.Dir(rel), target)
	if full == ".." || strings.HasPrefix(full, "../") {
		return fmt.Errorf("%w: %s points to %q, outside the workspace", ErrLink, rel, target)
	}
	return nil
}

// checkPath accepts a snapshot path: relative, clean, no empty, ".", ".."
// or .git component, within the depth and length limits.
func checkPath(p string, lim Limits) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") || path.Clean(p) != p {
		return fmt.Errorf("%w: %q", ErrUnsafePath, p)
	}
	if err := lim.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafePath, err)
	}
	parts := strings.Split(p, "/")
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return fmt.Errorf("%w: %q", ErrUnsafePath, p)
		}
		if len(c) > maxNameBytes {
			return fmt.Errorf("%w: a name of %d bytes (%.40q…), over the %d bytes a file system allows", ErrUnsafePath, len(c), c, maxNameBytes)
		}
	}
	return nil
}

// What a Linux file system accepts: NAME_MAX for one component, and
// PATH_MAX less its terminating NUL for a symlink's target. A snapshot
// holding more could only fail half-way through a restore.
const (
	maxNameBytes = 255
	maxLinkBytes = 4095
)

// loginPath reports a login credential file (treepolicy.Login), which a
// snapshot never holds and a restore refuses, whoever tracked it.
func loginPath(p string) bool {
	c, _ := catalogue.Policy().Classify(p)
	return c == treepolicy.Login
}

// openDir opens the directory rel: the root by path, any other relative
// to its parent's descriptor and without following a symlink, so a
// directory swapped for a link while the walk runs cannot lead it out of
// the workspace.
func openDir(parent *os.File, root, rel string) (*os.File, error) {
	if parent == nil {
		return os.Open(root)
	}
	fd, err := unix.Openat(int(parent.Fd()), path.Base(rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(root, filepath.FromSlash(rel)), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, filepath.FromSlash(rel))), nil
}

// modeOf is the fs.FileMode of a raw stat, as os.Lstat would report it.
func modeOf(st *unix.Stat_t) fs.FileMode {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	}
	return m
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
