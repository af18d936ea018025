package packer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/tether-run/tether/internal/packer/archive"
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

// MaxParts bounds the archives UnpackParts assembles: a base and its
// deltas. A caller merges deltas (packs the whole session again) long
// before this.
const MaxParts = 1024

// ErrBrokenChain: a delta that does not follow what the archives before it
// left (archive.ErrBrokenChain). It is also an ErrCorrupt.
var ErrBrokenChain = archive.ErrBrokenChain

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
	// State is the sha256 state after the file's last byte and Sample the
	// sha256 of its sample (sample.go): with both, the next delta hashes
	// only what was appended.
	State  []byte `json:"state,omitempty"`
	Sample string `json:"sample,omitempty"`
}

// PackDelta packs the session as PackSession does, but when base (the
// manifest of the archive the live session was last packed to or unpacked
// from) is given and every file of it is still there, the archive is a
// delta (Kind KindDelta) holding only what changed since: appended bytes,
// and new or rewritten files whole. Without a base, or when a file of the
// base is gone, it is a whole archive. It returns the archive and the
// manifest of what it packed, the base for the next delta.
func (p *Packer) PackDelta(ctx context.Context, sessionID string, base *Manifest) ([]byte, *Manifest, error) {
	m := &Manifest{Files: map[string]FileState{}}
	blob, err := p.pack(ctx, sessionID, base, m)
	if err != nil {
		return nil, nil, err
	}
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
		st, grew, err := fileSum(root, *e, was, ok)
		if err != nil {
			return false, err
		}
		e.sum, e.state, e.sample = st.SHA256, st.State, st.Sample
		switch {
		case grew && e.info.Size() == was.Size:
			e.skip = true // unchanged
		case grew:
			e.offset, e.prefix = was.Size, was.SHA256
		}
	}
	return true, nil
}

// fileSum returns the state of the listed file e (its sha256, hash state
// and sample) and reports whether its first was.Size bytes are the file
// was describes (when known), so only what follows them needs packing.
// When was has a hash state and the file's sample of those bytes is
// unchanged, only what follows them is read (sample.go).
func fileSum(root *os.Root, e entry, was FileState, known bool) (FileState, bool, error) {
	f, err := openListed(root, e)
	if err != nil {
		return FileState{}, false, err
	}
	defer f.Close()
	size := e.info.Size()
	if known {
		st, ok, err := grownSum(f, size, was)
		if err != nil {
			return FileState{}, false, shrank(e, err)
		}
		if ok {
			return st, true, nil
		}
	}
	h := sha256.New()
	grew := false
	rest := size
	if known && was.Size <= size {
		if _, err := io.CopyN(h, f, was.Size); err != nil {
			return FileState{}, false, shrank(e, err)
		}
		grew = hexSum(h) == was.SHA256
		rest -= was.Size
	}
	if _, err := io.CopyN(h, f, rest); err != nil {
		return FileState{}, false, shrank(e, err)
	}
	sample, err := sampleAt(f, size)
	if err != nil {
		return FileState{}, false, shrank(e, err)
	}
	return FileState{Size: size, SHA256: hexSum(h), State: hashState(h), Sample: sample}, grew, nil
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
