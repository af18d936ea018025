package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// A run's pack list stays short: once it holds more than maxPacks, the
// newest mergeBatch packs merge into one, and then the list is made
// geometric again (each pack more than mergeFactor times the size of the
// next newer one, else the two merge). A run of any length so holds
// O(log size) packs, and a new worker makes a handful of requests to
// restore it, while a snapshot uploads about the size of its change: a
// merge comes once every mergeBatch snapshots, and each byte is merged
// O(log) times.
const (
	maxPacks    = 16
	mergeBatch  = 8
	mergeFactor = 2
)

// publish uploads the new pack p (holding the commits after base up to tip)
// and returns the run's pack list with it, merging the newest packs while
// the list is not geometric.
func (w *Workspace) publish(ctx context.Context, packs []runstore.WorkspacePack, p *localPack, base, tip string) ([]runstore.WorkspacePack, int64, error) {
	uploaded, err := w.upload(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	out := append(slices.Clone(packs), runstore.WorkspacePack{
		Key: runstore.WorkspacePackKey(w.run, p.digest), Base: base, Tip: tip, Size: p.size,
	})
	if len(out) <= maxPacks {
		return out, uploaded, nil
	}
	merge := func(from int) error {
		merged, err := w.merge(ctx, out[from:])
		if err != nil {
			return err
		}
		up, err := w.upload(ctx, merged)
		if err != nil {
			return err
		}
		uploaded += up
		out = append(out[:from], runstore.WorkspacePack{
			Key: runstore.WorkspacePackKey(w.run, merged.digest), Base: out[from].Base, Tip: out[len(out)-1].Tip, Size: merged.size,
		})
		return nil
	}
	if err := merge(len(out) - mergeBatch); err != nil {
		return nil, uploaded, err
	}
	for n := len(out); n >= 2 && out[n-2].Size <= mergeFactor*out[n-1].Size; n = len(out) {
		if err := merge(n - 2); err != nil {
			return nil, uploaded, err
		}
	}
	return out, uploaded, nil
}

// upload writes a local pack to its key. The key names the content, so a
// retry (or another worker) writing the same pack is harmless.
func (w *Workspace) upload(ctx context.Context, p *localPack) (int64, error) {
	key := runstore.WorkspacePackKey(w.run, p.digest)
	f, err := os.Open(p.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := w.m.blobs.Put(ctx, key, f, p.size, blob.CreateOnly()); err != nil {
		return 0, fmt.Errorf("workspace: upload %s: %w", key, err)
	}
	return p.size, nil
}

// merge writes one pack holding the objects of packs.
func (w *Workspace) merge(ctx context.Context, packs []runstore.WorkspacePack) (*localPack, error) {
	var parts []*localPack
	for _, p := range packs {
		lp, _, err := w.fetch(ctx, p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, lp)
	}
	pb, err := newPackBuilder(w.store.dir)
	if err != nil {
		return nil, err
	}
	defer pb.abort()
	for _, lp := range parts {
		f, err := w.store.file(lp)
		if err != nil {
			return nil, err
		}
		for i, e := range lp.entries {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			raw, err := readRaw(f, e)
			if err != nil {
				return nil, err
			}
			if err := pb.addRaw(e, raw); err != nil {
				return nil, err
			}
		}
	}
	tmp, digest, entries, err := pb.finish()
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	return w.store.keep(tmp, digest, entries)
}

// fetch makes a pack of the run local: it downloads it unless this worker
// has it, and checks it in full (digest, format, limits) before keeping
// it. It returns the bytes downloaded.
func (w *Workspace) fetch(ctx context.Context, p runstore.WorkspacePack) (*localPack, int64, error) {
	digest, err := runstore.WorkspacePackDigest(w.run, p.Key)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if lp, ok := w.store.pack(digest); ok {
		return lp, 0, nil
	}
	rc, err := w.m.blobs.Get(ctx, p.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: pack %s is not in the blob store", ErrMissing, p.Key)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: download %s: %w", p.Key, err)
	}
	defer rc.Close()
	cr := &cappedReader{r: rc, left: p.Size + 1}
	lp, err := w.store.ingest(ctx, cr, digest, scanLimitsOf(w.m.lim))
	if err != nil {
		if cr.over {
			return nil, 0, fmt.Errorf("%w: pack %s is larger than the %d bytes its checkpoint records", ErrCorrupt, p.Key, p.Size)
		}
		return nil, 0, fmt.Errorf("workspace: pack %s: %w", p.Key, err)
	}
	return lp, cr.read, nil
}

// cappedReader fails once more than left bytes arrive, so a blob bigger
// than its record is never read to its end.
type cappedReader struct {
	r    io.Reader
	left int64
	read int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, fmt.Errorf("%w: blob larger than recorded", ErrCorrupt)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	if c.left <= 0 && err == nil {
		c.over = true
		return n, fmt.Errorf("%w: blob larger than recorded", ErrCorrupt)
	}
	return n, err
}
