package packer

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tether-run/tether/internal/packer/archive"
)

const (
	stagingPrefix = ".tether-unpack-"
	// staleStaging is how old a staging directory left by a crashed unpack
	// must be before the next unpack in the same root removes it.
	staleStaging = time.Hour
)

// UnpackSession restores an archive made by PackSession into the live root,
// under the paths the CLI uses from the packer's working directory (Claude
// Code's files move under the target working directory's project slug).
//
// The archive is checked and extracted in full into a fresh staging
// directory inside the state root first; any refusal leaves the live root
// as it was. Then each part of the session is renamed into place, the main
// file last, so HasSession turns true only when the whole session is there.
//
// The archive is authoritative: an existing copy of the same session (a
// retry of the same blob, or a stale copy from an earlier visit) is replaced
// part by part with atomic renames, and parts of it the archive does not
// hold are removed. Existing files are never opened, truncated or written
// through. A session path occupied by anything else (a symlink, a device, a
// directory where a file goes) is refused with ErrExists and left alone.
func (p *Packer) UnpackSession(ctx context.Context, sessionID string, blob []byte) error {
	if err := p.unpack(ctx, sessionID, blob); err != nil {
		return fmt.Errorf("unpack %s session %s into %s: %w", p.backend, sessionID, p.env.StateRoot, err)
	}
	return nil
}

func (p *Packer) unpack(ctx context.Context, id string, blob []byte) (err error) {
	if err := p.check(id); err != nil {
		return err
	}
	h, payload, err := p.payload(id, blob)
	if err != nil {
		return err
	}
	if h.Kind != "" {
		return fmt.Errorf("%w: the archive is a %s of session %s, which only UnpackParts applies, after its base", ErrCorrupt, h.Kind, id)
	}
	return p.place(ctx, id, func(stage *os.Root, stageAbs string) (map[string]Place, error) {
		return p.extract(ctx, stage, stageAbs, id, payload)
	})
}

// payload checks an archive's size and header, which must be of this
// backend and session id, and returns its header and compressed payload.
func (p *Packer) payload(id string, blob []byte) (Header, []byte, error) {
	if int64(len(blob)) > maxBlobBytes(p.limits) {
		return Header{}, nil, fmt.Errorf("%w: blob of %d bytes", ErrTooLarge, len(blob))
	}
	h, payload, err := archive.Split(blob)
	if err != nil {
		return Header{}, nil, err
	}
	if h.Backend != p.backend || h.SessionID != id {
		return Header{}, nil, fmt.Errorf("%w: archive holds %s session %q, expected %s session %q", ErrHeaderMismatch, h.Backend, h.SessionID, p.backend, id)
	}
	return h, payload, nil
}

// place stages the session's files with fill in a private directory of the
// state root, then commits them into the live root.
func (p *Packer) place(ctx context.Context, id string, fill func(stage *os.Root, stageAbs string) (map[string]Place, error)) (err error) {
	rootAbs, err := filepath.Abs(p.env.StateRoot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(rootAbs, dirMode); err != nil {
		return err
	}
	root, err := os.OpenRoot(rootAbs)
	if err != nil {
		return err
	}
	defer root.Close()
	sweepStaging(root)

	stageAbs, err := os.MkdirTemp(rootAbs, stagingPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if rerr := disk.removeAll(stageAbs); rerr != nil {
			if err == nil {
				slog.Warn("packer: staging directory left behind; the next unpack removes it after an hour", "dir", stageAbs, "err", rerr)
			} else {
				err = errors.Join(err, rerr)
			}
		}
	}()
	stage, err := os.OpenRoot(stageAbs)
	if err != nil {
		return err
	}
	defer stage.Close()

	parts, err := fill(stage, stageAbs)
	if err != nil {
		return err
	}
	c := committer{root: root, rootAbs: rootAbs, stageAbs: stageAbs}
	return c.commit(ctx, p, id, parts)
}

// extract reads the whole archive into the staging directory, checking every
// entry before writing it, and returns the session parts it held.
func (p *Packer) extract(ctx context.Context, stage *os.Root, stageAbs, id string, payload []byte) (map[string]Place, error) {
	dec, err := p.newDecoder()
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	if err := dec.Reset(bytes.NewReader(payload)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return p.extractTar(ctx, stage, stageAbs, id, &archive.CapReader{Ctx: ctx, R: dec, Left: maxStreamBytes(p.limits)})
}

// extractTar is extract over the tar stream itself.
func (p *Packer) extractTar(ctx context.Context, stage *os.Root, stageAbs, id string, stream io.Reader) (map[string]Place, error) {
	tr := tar.NewReader(stream)

	resolve, err := p.layout.Resolver(p.env, id)
	if err != nil {
		return nil, err
	}
	parts := map[string]Place{}
	seen := map[string]bool{} // explicit entries
	dirs := map[string]bool{} // folders counted, listed or implied
	made := map[string]bool{} // staging folders known to exist
	var count int
	var total int64
	countDir := func(name string) error {
		if dirs[name] {
			return nil
		}
		dirs[name] = true
		if count++; count > p.limits.MaxFiles {
			return fmt.Errorf("%w: more than %d files and folders (counting the folders entries imply)", ErrTooLarge, p.limits.MaxFiles)
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		th, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, archive.StreamErr(err)
		}
		name, pl, rel, err := p.checkEntry(th, id, resolve)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: entry %q appears twice", ErrCorrupt, name)
		}
		seen[name] = true
		isDir := th.Typeflag == tar.TypeDir
		if !isDir {
			if count++; count > p.limits.MaxFiles {
				return nil, fmt.Errorf("%w: more than %d files and folders", ErrTooLarge, p.limits.MaxFiles)
			}
		}
		// The folders of a directory part on the way to this entry count
		// too, listed or not; the walk stops at the first one counted, so
		// each folder costs one step.
		if pl.Dir {
			for d := name; len(d) >= len(pl.Name); d = path.Dir(d) {
				if d == name && !isDir {
					continue
				}
				if dirs[d] {
					break
				}
				if err := countDir(d); err != nil {
					return nil, err
				}
			}
		}
		if dst := filepath.Join(stageAbs, filepath.FromSlash(rel)); !strings.HasPrefix(dst, stageAbs+string(filepath.Separator)) {
			return nil, fmt.Errorf("%w: entry %q lands outside the staging directory", ErrUnsafePath, name)
		}
		parts[pl.Path] = pl
		if isDir {
			if err := mkStaged(stage, made, rel); err != nil {
				return nil, fmt.Errorf("entry %q: %w", name, err)
			}
			continue
		}
		if th.Size > p.limits.MaxFileBytes {
			return nil, fmt.Errorf("%w: entry %q is %d bytes, over the %d-byte single-file limit", ErrTooLarge, name, th.Size, p.limits.MaxFileBytes)
		}
		if total += th.Size; total > p.limits.MaxTotalBytes {
			return nil, fmt.Errorf("%w: archive is over the %d-byte total limit", ErrTooLarge, p.limits.MaxTotalBytes)
		}
		if err := writeStaged(stage, made, rel, tr, th.Size); err != nil {
			return nil, fmt.Errorf("entry %q: %w", name, err)
		}
	}
	if err := archive.Drain(stream); err != nil {
		return nil, err
	}
	if !hasPrimary(slices.Collect(maps.Values(parts))) {
		return nil, fmt.Errorf("%w: the archive holds no session file", ErrCorrupt)
	}
	if err := syncTree(ctx, stage); err != nil {
		return nil, err
	}
	return parts, nil
}

// checkEntry refuses anything but a regular file or directory with a safe,
// whitelisted, non-denied name, and returns the entry's name, its part, and
// where it goes relative to the state root.
func (p *Packer) checkEntry(th *tar.Header, id string, resolve func(string) (Place, bool)) (name string, pl Place, rel string, err error) {
	name = th.Name
	switch th.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir:
		name = trimSlash(name)
	case tar.TypeSymlink, tar.TypeLink:
		return "", Place{}, "", fmt.Errorf("%w: %q links to %q", ErrLinkEntry, th.Name, th.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return "", Place{}, "", fmt.Errorf("%w: %q is a device or fifo", ErrSpecialEntry, th.Name)
	default:
		return "", Place{}, "", fmt.Errorf("%w: %q has entry type %q", ErrSpecialEntry, th.Name, th.Typeflag)
	}
	if err := checkPath(p.limits, name); err != nil {
		return "", Place{}, "", err
	}
	if err := checkRel(name); err != nil {
		return "", Place{}, "", err
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", Place{}, "", fmt.Errorf("%w: %q", ErrUnsafePath, name)
	}
	if p.denied(name) {
		return "", Place{}, "", fmt.Errorf("%w: %q", ErrDenied, name)
	}
	pl, ok := resolve(name)
	if !ok {
		return "", Place{}, "", fmt.Errorf("%w: %q is not a file of %s session %s", ErrNotWhitelisted, name, p.backend, id)
	}
	isDir := th.Typeflag == tar.TypeDir
	if (!pl.Dir && (name != pl.Name || isDir)) || (pl.Dir && name == pl.Name && !isDir) {
		return "", Place{}, "", fmt.Errorf("%w: %q has the wrong type for its part of the session", ErrNotWhitelisted, name)
	}
	rel = pl.Path + name[len(pl.Name):]
	if err := checkPath(p.limits, rel); err != nil {
		return "", Place{}, "", err
	}
	if err := checkRel(rel); err != nil {
		return "", Place{}, "", err
	}
	if p.denied(rel) {
		return "", Place{}, "", fmt.Errorf("%w: %q", ErrDenied, rel)
	}
	return name, pl, rel, nil
}

// mkStaged creates folder rel and its parents in the staging directory,
// remembering what exists so that each folder is made once.
func mkStaged(stage *os.Root, made map[string]bool, rel string) error {
	if rel == "." || made[rel] {
		return nil
	}
	if err := disk.mkdirAll(stage, rel, dirMode); err != nil {
		return stagingErr(err)
	}
	for d := rel; d != "." && !made[d]; d = path.Dir(d) {
		made[d] = true
	}
	return nil
}

// writeStaged creates rel in the staging directory (never opening an
// existing file) and copies exactly size bytes into it.
func writeStaged(stage *os.Root, made map[string]bool, rel string, r io.Reader, size int64) error {
	if err := mkStaged(stage, made, path.Dir(rel)); err != nil {
		return err
	}
	f, err := stage.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return stagingErr(err)
	}
	n, err := io.Copy(f, r)
	if err == nil && n != size {
		err = fmt.Errorf("%w: %d of %d bytes", ErrCorrupt, n, size)
	}
	if err == nil {
		err = disk.sync(f)
	}
	if cerr := disk.close(f); err == nil {
		err = cerr
	}
	if err != nil {
		return archive.StreamErr(err)
	}
	return nil
}

// stagingErr classifies a failure to create an entry in the fresh staging
// directory: a clash with an earlier entry is the archive's fault.
func stagingErr(err error) error {
	if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("%w: entries clash: %v", ErrCorrupt, err)
	}
	return err
}

// syncTree fsyncs dir and every folder below it, so the renames that
// follow publish durable directory entries. Each folder is opened from its
// parent's handle (one openat per folder, never a walk from the top), and
// the context is checked at every folder.
func syncTree(ctx context.Context, dir *os.Root) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub, err := dir.OpenRoot(e.Name())
		if err != nil {
			return err
		}
		err = syncTree(ctx, sub)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return disk.sync(f)
}

func syncDir(root *os.Root, dir string) error {
	f, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = disk.sync(f)
	if cerr := disk.close(f); err == nil {
		err = cerr
	}
	return err
}

// sweepStaging removes staging directories that crashed unpacks left behind.
func sweepStaging(root *os.Root) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleStaging {
			continue
		}
		if err := disk.removeIn(root, e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("packer: cannot remove a stale staging directory", "dir", e.Name(), "err", err)
		}
	}
}
