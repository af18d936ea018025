package packer

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Tar entries are normalised so that packing the same files twice gives the
// same bytes (and the same Digest): no times, owners or permissions from the
// source machine.
var (
	epoch = time.Unix(0, 0).UTC()
)

const (
	fileMode = 0o600
	dirMode  = 0o700
)

// encoderLevel trades speed for size. On transcript-like JSONL the default
// level makes archives ~8% smaller but packs ~25% slower than the fastest,
// which already matches `zstd -1`; packing is on every visit's critical
// path, so speed wins (numbers in docs/packers.md).
var encoderLevel = zstd.SpeedFastest

// encoders keeps zstd encoders between packs. A new encoder allocates and
// clears its whole window on its first write, which cost more than
// compressing a session of a few hundred KB: a worker packs on every
// persist visit, so it reuses them.
var encoders sync.Pool

// pooledEncoder is an encoder and the level it was made with.
type pooledEncoder struct {
	*zstd.Encoder
	level zstd.EncoderLevel
}

// getEncoder returns an encoder at encoderLevel writing to w.
func getEncoder(w io.Writer) (*pooledEncoder, error) {
	if e, ok := encoders.Get().(*pooledEncoder); ok && e.level == encoderLevel {
		e.Reset(w)
		return e, nil
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(encoderLevel), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return &pooledEncoder{Encoder: zw, level: encoderLevel}, nil
}

// putEncoder returns e to the pool, holding on to no output.
func putEncoder(e *pooledEncoder) {
	e.Reset(io.Discard)
	encoders.Put(e)
}

// scanFiles turns the secret scan on; BenchmarkPack turns it off to
// measure what it costs.
var scanFiles = true

// entry is one tar entry to write.
type entry struct {
	name string // archive name
	rel  string // path relative to the state root
	dir  bool
	info fs.FileInfo // lstat info, for regular files

	// A delta's plan (planDelta): the file's sha256, whether it is
	// unchanged since the base (skip), and where the bytes it appends
	// begin, with the sha256 of what precedes them.
	sum    string
	state  []byte // the sha256 state after the file's last byte
	sample string // the file's sample (sample.go)
	skip   bool
	offset int64
	prefix string
}

// PackSession archives the session's whitelisted files from the live root.
// It fails with ErrNoSession when the session's main file is absent, with
// ErrLinkEntry or ErrSpecialEntry when a session path holds a link or a
// special file (ErrHardLink for a file with more than one hard link), and
// with ErrTooLarge when the session is over the limits.
// Files on the deny list inside a session directory are left out.
//
// Every file is scanned for tokens shaped like API keys. With RedactDetect
// (the default; see WithRedact) each finding is logged as a warning naming
// the file, the line and the kind of key, never the value; with
// RedactRefuse the pack fails with ErrSecret.
func (p *Packer) PackSession(ctx context.Context, sessionID string) ([]byte, error) {
	return p.pack(ctx, sessionID, nil, nil)
}

// pack archives the session. With a base (PackDelta) the archive is a
// delta when planDelta allows; with m, every file's size and sha256 is
// recorded in it.
func (p *Packer) pack(ctx context.Context, sessionID string, base, m *Manifest) ([]byte, error) {
	if err := p.check(sessionID); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(p.env.StateRoot)
	if err != nil {
		return nil, p.noSession(sessionID, err)
	}
	defer root.Close()
	parts, err := p.findLive(root, sessionID)
	if err != nil {
		return nil, fmt.Errorf("pack %s session %s: %w", p.backend, sessionID, err)
	}
	if !hasPrimary(parts) {
		return nil, p.noSession(sessionID, nil)
	}
	entries, err := p.collect(ctx, root, parts)
	if err != nil {
		return nil, fmt.Errorf("pack %s session %s: %w", p.backend, sessionID, err)
	}
	h := Header{
		Backend:       p.backend,
		SessionID:     sessionID,
		SourceWorkdir: p.layout.Workdir(p.env),
		CreatedBy:     createdBy(),
	}
	if base != nil && len(base.Files) > 0 {
		delta, err := p.planDelta(ctx, root, entries, base)
		if err != nil {
			return nil, fmt.Errorf("pack %s session %s: %w", p.backend, sessionID, err)
		}
		if delta {
			h.Kind = KindDelta
		}
	}
	sw := &secretWarnings{p: p, session: sessionID}
	blob, err := p.writeEntries(ctx, root, h, entries, sw, m)
	if err != nil {
		return nil, fmt.Errorf("pack %s session %s: %w", p.backend, sessionID, err)
	}
	sw.summary()
	return blob, nil
}

// secretWarnings logs the secret-looking tokens one pack finds, at most
// maxSecretWarnings of them and then a count.
type secretWarnings struct {
	p       *Packer
	session string
	logged  int
	more    int
}

// file handles the findings of one file: an error under RedactRefuse, a
// warning each otherwise.
func (w *secretWarnings) file(name string, found []treepolicy.Finding, total int) error {
	if total == 0 {
		return nil
	}
	if w.p.redact == RedactRefuse {
		f := found[0]
		return fmt.Errorf("%w: %s line %d holds a token shaped like a secret (%s); remove it from the session, or set %s=detect to pack it anyway (and keep blobs encrypted with encrypt=true)", ErrSecret, name, f.Line, f.Kind, RedactEnv)
	}
	logged := 0
	for _, f := range found {
		if w.logged == maxSecretWarnings {
			break
		}
		w.logged++
		logged++
		w.p.logger().Warn("packer: a session file holds a secret-looking token; it is packed as it is (TETHER_REDACT=refuse refuses such sessions; encrypt=true keeps blobs encrypted at rest)",
			"backend", w.p.backend, "session", w.session, "file", name, "line", f.Line, "kind", f.Kind)
	}
	w.more += total - logged
	return nil
}

func (w *secretWarnings) summary() {
	if w.more > 0 {
		w.p.logger().Warn("packer: more secret-looking tokens in the session than were logged", "backend", w.p.backend, "session", w.session, "more", w.more)
	}
}

func hasPrimary(ps []Place) bool {
	for _, p := range ps {
		if p.Primary {
			return true
		}
	}
	return false
}

// collect lists the entries of the session's parts, sorted by name, and
// checks them against the limits.
func (p *Packer) collect(ctx context.Context, root *os.Root, parts []Place) ([]entry, error) {
	var out []entry
	var total int64
	add := func(e entry) error {
		if len(out) >= p.limits.MaxFiles {
			return fmt.Errorf("%w: more than %d files and directories", ErrTooLarge, p.limits.MaxFiles)
		}
		for _, s := range []string{e.rel, e.name} {
			if err := checkPath(p.limits, s); err != nil {
				return err
			}
		}
		if !e.dir {
			if err := singleLink(e.rel, e.info); err != nil {
				return err
			}
			size := e.info.Size()
			if size > p.limits.MaxFileBytes {
				return fmt.Errorf("%w: %s is %d bytes, over the %d-byte single-file limit", ErrTooLarge, e.rel, size, p.limits.MaxFileBytes)
			}
			total += size
			if total > p.limits.MaxTotalBytes {
				return fmt.Errorf("%w: session is over the %d-byte total limit", ErrTooLarge, p.limits.MaxTotalBytes)
			}
		}
		out = append(out, e)
		return nil
	}
	for _, pl := range parts {
		if !pl.Dir {
			fi, err := root.Lstat(pl.Path)
			if err != nil {
				return nil, err
			}
			if err := add(entry{name: pl.Name, rel: pl.Path, info: fi}); err != nil {
				return nil, err
			}
			continue
		}
		err := fs.WalkDir(root.FS(), pl.Path, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			name := pl.Name + rel[len(pl.Path):]
			if p.denied(name) || p.denied(rel) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			m := fi.Mode()
			switch {
			case m.IsDir():
				return add(entry{name: name, rel: rel, dir: true})
			case m.IsRegular():
				return add(entry{name: name, rel: rel, info: fi})
			case m&fs.ModeSymlink != 0:
				return fmt.Errorf("%w: %s is a symlink; session directories must hold plain files only", ErrLinkEntry, rel)
			default:
				return fmt.Errorf("%w: %s is a %s; session directories must hold plain files only", ErrSpecialEntry, rel, treepolicy.Kind(m))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// writeEntries writes the archive of entries under h. When m is not nil it
// records each file's size and sha256 in it.
func (p *Packer) writeEntries(ctx context.Context, root *os.Root, h Header, entries []entry, sw *secretWarnings, m *Manifest) ([]byte, error) {
	var raw int64
	for _, e := range entries {
		if !e.dir && !e.skip {
			raw += e.info.Size() - e.offset // what this archive holds of it
		}
	}
	// JSONL compresses 3-10x; starting at a third saves most regrowth.
	buf := bytes.NewBuffer(make([]byte, 0, 4096+raw/3))
	if err := appendPrefix(buf, h); err != nil {
		return nil, err
	}
	zw, err := getEncoder(buf)
	if err != nil {
		return nil, err
	}
	defer putEncoder(zw)
	tw := tar.NewWriter(zw)
	var sc *treepolicy.Scanner // one for every file, reset between them
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		th := &tar.Header{Name: e.name, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			th.Typeflag, th.Name, th.Mode = tar.TypeDir, e.name+"/", dirMode
			if err := tw.WriteHeader(th); err != nil {
				return nil, err
			}
			continue
		}
		// A file no delta plan hashed is hashed and sampled as it is
		// copied; a planned one was, when it was planned.
		var (
			sum hash.Hash
			smp *sampler
		)
		if m != nil && e.sum == "" {
			sum, smp = sha256.New(), newSampler(e.info.Size())
		}
		record := func() {
			if m == nil {
				return
			}
			if sum != nil {
				e.sum, e.state, e.sample = hexSum(sum), hashState(sum), smp.sum()
			}
			m.Files[e.name] = FileState{Size: e.info.Size(), SHA256: e.sum, State: e.state, Sample: e.sample}
		}
		if e.skip {
			record()
			continue
		}
		th.Typeflag, th.Mode, th.Size = tar.TypeReg, fileMode, e.info.Size()-e.offset
		if h.Kind == KindDelta {
			th.PAXRecords = map[string]string{archive.PAXSum: e.sum}
			if e.offset > 0 {
				th.PAXRecords[archive.PAXOffset] = strconv.FormatInt(e.offset, 10)
				th.PAXRecords[archive.PAXPrefix] = e.prefix
			}
		}
		if err := tw.WriteHeader(th); err != nil {
			return nil, err
		}
		w := io.Writer(tw)
		if sum != nil {
			w = io.MultiWriter(tw, sum, smp)
		}
		if !scanFiles {
			if err := copyFile(w, root, e); err != nil {
				return nil, err
			}
			record()
			continue
		}
		if sc == nil {
			sc = treepolicy.NewScanner(maxSecretWarnings)
		} else {
			sc.Reset()
		}
		if err := copyFile(io.MultiWriter(w, sc), root, e); err != nil {
			return nil, err
		}
		if err := sw.file(e.name, sc.Finish(), sc.Total()); err != nil {
			return nil, err
		}
		record()
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyFile copies exactly the size recorded in e, from the very file that
// was listed: a file swapped for a link or another file since is refused.
func copyFile(w io.Writer, root *os.Root, e entry) error {
	f, err := openListed(root, e)
	if err != nil {
		return err
	}
	defer f.Close()
	if e.offset > 0 {
		if _, err := f.Seek(e.offset, io.SeekStart); err != nil {
			return err
		}
	}
	n, err := io.CopyN(w, f, e.info.Size()-e.offset)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("packer: %s shrank from %d to %d bytes while being packed; pack again once the CLI has exited", e.rel, e.info.Size(), e.offset+n)
	}
	return err
}

// openListed opens the very file that was listed as e: a file swapped for
// a link or another file since, or hard-linked since, is refused.
func openListed(root *os.Root, e entry) (*os.File, error) {
	f, err := root.Open(e.rel)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || !os.SameFile(fi, e.info)) {
		err = fmt.Errorf("%w: %s changed while being packed", ErrLinkEntry, e.rel)
	}
	if err == nil {
		err = singleLink(e.rel, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// trimSlash drops one trailing slash (tar directory names carry one).
func trimSlash(s string) string {
	if len(s) > 1 && s[len(s)-1] == '/' {
		return s[:len(s)-1]
	}
	return s
}
