// Package conversation reads the conversation of an agent node from the
// session blobs a checkpoint names, for a person to read (the console's
// visit page): the blobs are read from the store with a size cap, each
// checked against the digest the checkpoint recorded, assembled (a whole
// archive and the incremental parts after it) with internal/packer/archive,
// and the backend's conversation file is read by the backend's own
// transcript reader, one page at a time.
//
// It links no executor, packer, sandbox or MCP server, and no registry of
// backends: only the store and the archive's read side; the caller hands
// it the backends' readers (Readers, for the console the catalogue's).
// Everything it reads is untrusted; every failure is a typed error.
package conversation

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/transcript"
)

// Typed failures, tested with errors.Is. Failures of the archive itself
// are internal/packer/archive's (ErrDigestMismatch, ErrCorrupt,
// ErrBrokenChain, ErrTooLarge, ...).
var (
	// ErrNoSession: the source names no session blob (the node has no
	// completed persist visit, or its slot was dropped).
	ErrNoSession = errors.New("conversation: no session blob")
	// ErrNoReader: the backend has no transcript reader (it keeps no
	// session, or is unknown to this build).
	ErrNoReader = errors.New("conversation: no transcript reader for the backend")
	// ErrGone: a blob the checkpoint names is not in the store (deleted by
	// a rewind or a retention policy).
	ErrGone = errors.New("conversation: session blob is gone from the store")
	// ErrUnchecked: the checkpoint records no digest for a blob, or the
	// ref is not a session ref of the run: it is not read.
	ErrUnchecked = errors.New("conversation: session blob cannot be checked")
	// ErrNoConversation: the archive holds no conversation file of the
	// session.
	ErrNoConversation = errors.New("conversation: archive holds no conversation file")
)

// Part is one session blob: the whole archive first, then the
// incremental parts packed after it.
type Part struct {
	Ref    string
	Digest string
	Size   int64
}

// Source is where one node's session lies.
type Source struct {
	Store     blob.Store
	RunID     string
	Backend   string
	SessionID string
	// Parts are the blobs, the whole archive first; see FromSlot and
	// FromPause.
	Parts []Part
}

// FromSlot is the source of a checkpoint's session slot: the node's
// session as its last completed visit left it.
func FromSlot(store blob.Store, runID string, s runstore.NodeSessionSlot) Source {
	src := Source{Store: store, RunID: runID, Backend: s.Backend, SessionID: s.SessionID}
	if s.StateRef != "" {
		src.Parts = append(src.Parts, Part{Ref: s.StateRef, Digest: s.Digest, Size: s.Size})
		for _, p := range s.Parts {
			src.Parts = append(src.Parts, Part{Ref: p.Ref, Digest: p.Digest, Size: p.Size})
		}
	}
	return src
}

// FromPause is the source of a paused visit's session: the conversation
// of an agent that asked the user, up to its question.
func FromPause(store blob.Store, runID string, p runstore.PauseInfo) Source {
	src := Source{Store: store, RunID: runID, Backend: p.Backend, SessionID: p.SessionID}
	if p.BackendSessionStateRef != "" {
		src.Parts = []Part{{Ref: p.BackendSessionStateRef, Digest: p.BackendSessionDigest}}
	}
	return src
}

// Readers find the transcript reader of a backend by its name; false for
// a backend that keeps no session or is unknown (transcripts.Reader).
type Readers func(backend string) (transcript.Reader, bool)

// Read returns the page of at most n entries (n <= 0: Limits.MaxPage)
// from entry index from of the conversation in src. Reading streams: the
// conversation file is decompressed and parsed only up to the end of the
// page (plus one entry, to know whether another page follows), so a later
// page costs more than the first, and no page holds the whole session in
// memory. Each blob is read with a cap, its digest checked, and its
// archive header must name src's backend and session; readers gives the
// backend's reader.
func Read(ctx context.Context, readers Readers, src Source, from, n int, lim transcript.Limits) (transcript.Page, error) {
	lim = lim.Or(transcript.DefaultLimits())
	if len(src.Parts) == 0 {
		return transcript.Page{}, fmt.Errorf("%w: node session %s of backend %s has no blob in the checkpoint", ErrNoSession, src.SessionID, src.Backend)
	}
	if len(src.Parts) > archiveMaxParts {
		return transcript.Page{}, fmt.Errorf("%w: %d parts, more than %d", archive.ErrTooLarge, len(src.Parts), archiveMaxParts)
	}
	reader, ok := readers(src.Backend)
	if !ok {
		return transcript.Page{}, fmt.Errorf("%w: %q", ErrNoReader, src.Backend)
	}
	payloads, err := fetch(ctx, src, lim)
	if err != nil {
		return transcript.Page{}, err
	}
	w := transcript.NewWriter(from, n, lim)
	cut, err := walk(ctx, src, payloads, reader, w)
	if err != nil {
		return transcript.Page{}, fmt.Errorf("conversation: read %s session %s of run %s: %w", src.Backend, src.SessionID, src.RunID, err)
	}
	p := w.Page()
	p.Backend, p.SessionID, p.Cut = src.Backend, src.SessionID, cut
	return p, nil
}

// archiveMaxParts bounds the parts of one source, as the packer bounds a
// restore.
const archiveMaxParts = 1024

// fetch reads every part's blob, checks it, and returns the payloads.
func fetch(ctx context.Context, src Source, lim transcript.Limits) ([][]byte, error) {
	out := make([][]byte, len(src.Parts))
	var total int64
	for i, p := range src.Parts {
		if _, _, err := runstore.ParseRef(src.RunID, p.Ref); err != nil {
			return nil, fmt.Errorf("%w: part %d: %v", ErrUnchecked, i, err)
		}
		if p.Digest == "" {
			return nil, fmt.Errorf("%w: the checkpoint records no digest for %s; it is not read", ErrUnchecked, p.Ref)
		}
		data, err := blob.GetBytesMax(ctx, src.Store, p.Ref, lim.MaxBlobBytes)
		switch {
		case errors.Is(err, blob.ErrNotFound):
			return nil, fmt.Errorf("%w: %s", ErrGone, p.Ref)
		case errors.Is(err, blob.ErrTooLarge):
			return nil, fmt.Errorf("%w: %s is over %d bytes: %v", archive.ErrTooLarge, p.Ref, lim.MaxBlobBytes, err)
		case err != nil:
			return nil, fmt.Errorf("conversation: read %s: %w", p.Ref, err)
		}
		if total += int64(len(data)); total > 2*lim.MaxBlobBytes {
			return nil, fmt.Errorf("%w: the session's blobs hold more than %d bytes", archive.ErrTooLarge, 2*lim.MaxBlobBytes)
		}
		if err := archive.VerifyDigest(data, p.Digest); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Ref, err)
		}
		h, payload, err := archive.Split(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Ref, err)
		}
		switch {
		case h.Backend != src.Backend || h.SessionID != src.SessionID:
			return nil, fmt.Errorf("%w: %s holds %s session %q, not %s session %q", archive.ErrHeaderMismatch, p.Ref, h.Backend, h.SessionID, src.Backend, src.SessionID)
		case i == 0 && h.Kind != "":
			return nil, fmt.Errorf("%w: the first part is a %s, not a whole archive", archive.ErrBrokenChain, h.Kind)
		case i > 0 && h.Kind != archive.KindDelta:
			return nil, fmt.Errorf("%w: a part after the first is %q, not a %s", archive.ErrBrokenChain, h.Kind, archive.KindDelta)
		}
		out[i] = payload
	}
	return out, nil
}

// errRead ends the walk once the conversation file is read.
var errRead = errors.New("conversation: read")

// walk assembles the session and runs the reader over its conversation
// file; it reports whether the file was cut at MaxSessionBytes.
func walk(ctx context.Context, src Source, payloads [][]byte, reader transcript.Reader, w *transcript.Writer) (bool, error) {
	lim := w.Limits()
	rd := archive.Reader{Limits: archive.DefaultLimits(), Check: checkEntry}
	dec, err := archive.NewDecoder(rd.Limits, 1)
	if err != nil {
		return false, err
	}
	defer dec.Close()
	c := archive.NewChain()
	for i := 1; i < len(payloads); i++ {
		if err := rd.AddDelta(ctx, c, dec, payloads[i]); err != nil {
			return false, fmt.Errorf("part %d: %w", i, err)
		}
	}
	var cut bool
	err = rd.Walk(ctx, c, dec, payloads[0], func(f *archive.File) error {
		if f.Dir || !reader.File(f.Name, src.SessionID) {
			return nil
		}
		r := &capped{r: f, left: lim.MaxSessionBytes}
		if err := reader.Read(ctx, r, w); err != nil {
			return err
		}
		if cut = r.over; cut && !w.Full() {
			w.Note(fmt.Sprintf("the session is longer than %d bytes; the rest is not shown", lim.MaxSessionBytes))
		}
		return errRead
	})
	switch {
	case errors.Is(err, errRead):
		return cut, nil
	case err != nil:
		return false, err
	}
	return false, fmt.Errorf("%w: %s session %s", ErrNoConversation, src.Backend, src.SessionID)
}

// checkEntry accepts a regular file or a folder with a clean, relative
// name; the archive is never written anywhere, so that is all a name must
// be to be compared with the reader's.
func checkEntry(th *tar.Header) (string, error) {
	name := th.Name
	switch th.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir:
		if len(name) > 1 && name[len(name)-1] == '/' {
			name = name[:len(name)-1]
		}
	case tar.TypeSymlink, tar.TypeLink:
		return "", fmt.Errorf("%w: %q links to %q", archive.ErrLinkEntry, th.Name, th.Linkname)
	default:
		return "", fmt.Errorf("%w: %q has entry type %q", archive.ErrSpecialEntry, th.Name, th.Typeflag)
	}
	if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") {
		return "", fmt.Errorf("%w: %q", archive.ErrUnsafePath, th.Name)
	}
	return name, nil
}

// capped reads at most left bytes of r and reports whether r had more.
type capped struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			c.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
