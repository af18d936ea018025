package packer

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// Incremental packs. A CLI's session files only grow between compactions:
// what a visit adds is its own turn. PackDelta packs what changed since a
// Manifest of the session as it was last packed or unpacked: for a file
// that only grew, the appended bytes, with the size and the sha256 of the
// prefix they follow; for a file that is new or was rewritten, the whole
// file. UnpackParts applies a base archive and the deltas after it, in
// order, checking that every delta follows the files it extends, and then
// places the assembled session exactly as UnpackSession places an archive,
// with every check that applies to one.

// PAX records of a delta's file entries. Every file entry of a delta names
// the sha256 of the whole file it leaves behind; an entry that appends
// also names the size and sha256 of the prefix it follows.
const (
	paxOffset = "TETHER.offset"
	paxPrefix = "TETHER.prefix_sha256"
	paxSum    = "TETHER.sha256"
)

// MaxParts bounds the archives UnpackParts assembles: a base and its
// deltas. A caller merges deltas (packs the whole session again) long
// before this.
const MaxParts = 1024

// ErrBrokenChain: a delta that does not follow what the archives before it
// left (a file it extends is missing, of another size or content, or the
// result is not the file the delta was packed from), or a list of parts
// that does not start with a whole archive. It is also an ErrCorrupt.
var ErrBrokenChain error = &subError{msg: "packer: delta does not follow the archives before it", parent: ErrCorrupt}

// Manifest is what a session held when it was packed or unpacked: the size
// and sha256 of each file, by archive name. PackDelta compares the live
// session with it.
type Manifest struct {
	Files map[string]FileState `json:"files"`
}

// FileState is one file of a Manifest.
type FileState struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// PackDelta packs the session as PackSession does, but when base (the
// manifest of the archive the live session was last packed to or unpacked
// from) is given and every file of it is still there, the archive is a
// delta (Kind KindDelta) holding only what changed since: appended bytes,
// and new or rewritten files whole. Without a base, or when a file of the
// base is gone, it is a whole archive. It returns the archive and the
// manifest of what it packed, the base for the next delta.
func (p *Packer) PackDelta(ctx context.Context, sessionID string, base *Manifest) ([]byte, *Manifest, error) {
	blob, m, err := p.packDelta(ctx, sessionID, base)
	if err != nil {
		return nil, nil, fmt.Errorf("pack %s session %s: %w", p.backend, sessionID, err)
	}
	return blob, m, nil
}

func (p *Packer) packDelta(ctx context.Context, id string, base *Manifest) ([]byte, *Manifest, error) {
	if err := p.check(id); err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(p.env.StateRoot)
	if err != nil {
		return nil, nil, p.noSession(id, err)
	}
	defer root.Close()
	parts, err := p.findLive(root, id)
	if err != nil {
		return nil, nil, err
	}
	if !hasPrimary(parts) {
		return nil, nil, p.noSession(id, nil)
	}
	entries, err := p.collect(ctx, root, parts)
	if err != nil {
		return nil, nil, err
	}
	h := Header{Backend: p.backend, SessionID: id, SourceWorkdir: p.layout.Workdir(p.env), CreatedBy: createdBy()}
	if base != nil && len(base.Files) > 0 {
		if ok, err := p.planDelta(ctx, root, entries, base); err != nil {
			return nil, nil, err
		} else if ok {
			h.Kind = KindDelta
		}
	}
	sw := &secretWarnings{p: p, session: id}
	m := &Manifest{Files: map[string]FileState{}}
	blob, err := p.writeEntries(ctx, root, h, entries, sw, m)
	if err != nil {
		return nil, nil, err
	}
	sw.summary()
	return blob, m, nil
}

// planDelta decides, file by file, what a delta from base carries, and
// records it in entries. It reports false (a whole archive) when a file of
// base is no longer in the session: a delta cannot remove one.
func (p *Packer) planDelta(ctx context.Context, root *os.Root, entries []entry, base *Manifest) (bool, error) {
	live := map[string]bool{}
	for _, e := range entries {
		if !e.dir {
			live[e.name] = true
		}
	}
	for name := range base.Files {
		if !live[name] {
			return false, nil
		}
	}
	for i := range entries {
		e := &entries[i]
		if e.dir {
			continue
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		was, ok := base.Files[e.name]
		sum, grew, err := fileSum(root, *e, was, ok)
		if err != nil {
			return false, err
		}
		e.sum = sum
		switch {
		case grew && e.info.Size() == was.Size:
			e.skip = true // unchanged
		case grew:
			e.offset, e.prefix = was.Size, was.SHA256
		}
	}
	return true, nil
}

// fileSum hashes the listed file e and reports whether its first was.Size
// bytes are the file was describes (when known), so only what follows them
// needs packing.
func fileSum(root *os.Root, e entry, was FileState, known bool) (sum string, grew bool, err error) {
	f, err := root.Open(e.rel)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, e.info) {
		return "", false, fmt.Errorf("%w: %s changed while being packed", ErrLinkEntry, e.rel)
	}
	h := sha256.New()
	size := e.info.Size()
	if known && was.Size <= size {
		if _, err := io.CopyN(h, f, was.Size); err != nil {
			return "", false, shrank(e, err)
		}
		grew = hexSum(h) == was.SHA256
		size -= was.Size
	}
	if _, err := io.CopyN(h, f, size); err != nil {
		return "", false, shrank(e, err)
	}
	return hexSum(h), grew, nil
}

func shrank(e entry, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("packer: %s shrank below %d bytes while being packed; pack again once the CLI has exited", e.rel, e.info.Size())
	}
	return err
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// UnpackParts restores a session from a whole archive and the deltas packed
// after it, in order (each already checked against its recorded digest by
// the caller). Every part must be an archive of this backend and session;
// every delta entry must follow the file the parts before it left, and
// leave the file it was packed from. The assembled session is then placed
// as UnpackSession places an archive: every entry is checked against the
// layout and the limits, and nothing reaches the live root until all of it
// has. It returns the manifest of what it placed, the base for the next
// PackDelta.
func (p *Packer) UnpackParts(ctx context.Context, sessionID string, parts ...[]byte) (*Manifest, error) {
	m, err := p.unpackParts(ctx, sessionID, parts)
	if err != nil {
		return nil, fmt.Errorf("unpack %s session %s into %s from %d parts: %w", p.backend, sessionID, p.env.StateRoot, len(parts), err)
	}
	return m, nil
}

func (p *Packer) unpackParts(ctx context.Context, id string, parts [][]byte) (*Manifest, error) {
	if err := p.check(id); err != nil {
		return nil, err
	}
	switch {
	case len(parts) == 0:
		return nil, fmt.Errorf("%w: no parts", ErrBrokenChain)
	case len(parts) > MaxParts:
		return nil, fmt.Errorf("%w: %d parts, more than %d", ErrTooLarge, len(parts), MaxParts)
	}
	resolve, err := p.layout.Resolver(p.env, id)
	if err != nil {
		return nil, err
	}
	a := assembly{p: p, id: id, resolve: resolve, files: map[string]*asmEntry{}}
	for i, blob := range parts {
		if err := a.apply(ctx, i, blob); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	// The assembled stream goes to the same extraction as an archive's,
	// through a pipe rather than a second copy of the session in memory.
	err = p.place(ctx, id, func(stage *os.Root, stageAbs string) (map[string]Place, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(a.writeTar(pw)) }()
		defer pr.Close() // ends the writer if extraction stops early
		return p.extractTar(ctx, stage, stageAbs, id, &capReader{ctx: ctx, r: pr, left: maxStreamBytes(p.limits)})
	})
	if err != nil {
		return nil, err
	}
	return a.manifest(), nil
}

// assembly is a session being rebuilt from its parts, in memory, within the
// packer's limits.
type assembly struct {
	p       *Packer
	id      string
	resolve func(string) (Place, bool)
	order   []string
	files   map[string]*asmEntry
	total   int64
}

// asmEntry is a folder, or a file and the sha256 of its bytes so far, so
// that checking a chain costs one pass over what it holds.
type asmEntry struct {
	dir  bool
	data []byte
	sum  hash.Hash
}

// apply adds part i (the base when i is 0, a delta after it) to a.
func (a *assembly) apply(ctx context.Context, i int, blob []byte) error {
	if int64(len(blob)) > maxBlobBytes(a.p.limits) {
		return fmt.Errorf("%w: blob of %d bytes", ErrTooLarge, len(blob))
	}
	h, payload, err := splitBlob(blob)
	if err != nil {
		return err
	}
	if err := a.p.checkHeader(h, a.id); err != nil {
		return err
	}
	switch {
	case i == 0 && h.Kind != "":
		return fmt.Errorf("%w: the first part is a %s, not a whole archive", ErrBrokenChain, h.Kind)
	case i > 0 && h.Kind != KindDelta:
		return fmt.Errorf("%w: a part after the first is %q, not a %s", ErrBrokenChain, h.Kind, KindDelta)
	}
	dec, err := zstd.NewReader(bytes.NewReader(payload),
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(max(maxStreamBytes(a.p.limits), maxWindow))),
		zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer dec.Close()
	stream := &capReader{ctx: ctx, r: dec, left: maxStreamBytes(a.p.limits)}
	tr := tar.NewReader(stream)
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		th, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return streamErr(err)
		}
		name, _, _, err := a.p.checkEntry(th, a.id, a.resolve)
		if err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("%w: entry %q appears twice", ErrCorrupt, name)
		}
		seen[name] = true
		if err := a.entry(th, name, tr, h.Kind == KindDelta); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return drain(stream)
}

// entry applies one archive entry.
func (a *assembly) entry(th *tar.Header, name string, r io.Reader, delta bool) error {
	cur := a.files[name]
	if th.Typeflag == tar.TypeDir {
		if cur != nil && !cur.dir {
			return fmt.Errorf("%w: a folder where an earlier part has a file", ErrBrokenChain)
		}
		if cur == nil {
			return a.add(name, &asmEntry{dir: true})
		}
		return nil
	}
	if cur != nil && cur.dir {
		return fmt.Errorf("%w: a file where an earlier part has a folder", ErrBrokenChain)
	}
	var offset int64
	if v, ok := th.PAXRecords[paxOffset]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case !delta:
			return fmt.Errorf("%w: an append in a whole archive", ErrCorrupt)
		case err != nil || n < 0:
			return fmt.Errorf("%w: offset %q", ErrCorrupt, v)
		case cur == nil:
			return fmt.Errorf("%w: it appends to a file no earlier part holds", ErrBrokenChain)
		case int64(len(cur.data)) != n:
			return fmt.Errorf("%w: it appends at byte %d to a file of %d bytes", ErrBrokenChain, n, len(cur.data))
		}
		if hexSum(cur.sum) != th.PAXRecords[paxPrefix] {
			return fmt.Errorf("%w: the file it appends to is not the one it was packed after", ErrBrokenChain)
		}
		offset = n
	}
	if offset+th.Size > a.p.limits.MaxFileBytes {
		return fmt.Errorf("%w: %d bytes, over the %d-byte single-file limit", ErrTooLarge, offset+th.Size, a.p.limits.MaxFileBytes)
	}
	growth := th.Size
	if cur != nil {
		growth -= int64(len(cur.data)) - offset // what the entry replaces
	}
	if a.total += growth; a.total > a.p.limits.MaxTotalBytes {
		return fmt.Errorf("%w: the session is over the %d-byte total limit", ErrTooLarge, a.p.limits.MaxTotalBytes)
	}
	e := cur
	if e == nil || offset == 0 {
		e = &asmEntry{sum: sha256.New()} // new, or replaced whole
	}
	// Appends grow the file in place. A file read whole gets a quarter of
	// its size to spare, and growth past that doubles, so a chain of many
	// small deltas copies the file rarely.
	if need := offset + th.Size; int64(cap(e.data)) < need {
		grown := make([]byte, need, max(need+need/4, 2*int64(cap(e.data))))
		copy(grown, e.data[:offset])
		e.data = grown
	} else {
		e.data = e.data[:need]
	}
	if _, err := io.ReadFull(r, e.data[offset:]); err != nil {
		return streamErr(err)
	}
	e.sum.Write(e.data[offset:])
	if delta && hexSum(e.sum) != th.PAXRecords[paxSum] {
		return fmt.Errorf("%w: the file it leaves is not the one it was packed from", ErrBrokenChain)
	}
	switch {
	case cur == nil:
		return a.add(name, e)
	case e != cur:
		a.files[name] = e
	}
	return nil
}

func (a *assembly) add(name string, e *asmEntry) error {
	if len(a.order) >= a.p.limits.MaxFiles {
		return fmt.Errorf("%w: more than %d files and folders", ErrTooLarge, a.p.limits.MaxFiles)
	}
	a.order = append(a.order, name)
	a.files[name] = e
	return nil
}

// manifest is what the assembled session holds.
func (a *assembly) manifest() *Manifest {
	m := &Manifest{Files: map[string]FileState{}}
	for name, e := range a.files {
		if !e.dir {
			m.Files[name] = FileState{Size: int64(len(e.data)), SHA256: hexSum(e.sum)}
		}
	}
	return m
}

// writeTar writes the assembled session to w as one tar stream, in the
// order its entries first appeared.
func (a *assembly) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, name := range a.order {
		e := a.files[name]
		th := &tar.Header{Name: name, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			th.Typeflag, th.Name, th.Mode = tar.TypeDir, name+"/", dirMode
			if err := tw.WriteHeader(th); err != nil {
				return err
			}
			continue
		}
		th.Typeflag, th.Mode, th.Size = tar.TypeReg, fileMode, int64(len(e.data))
		if err := tw.WriteHeader(th); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
