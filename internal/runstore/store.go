package runstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/blob"
)

var (
	// ErrNoCheckpoint reports that a run (or a sequence number of it) has
	// no checkpoint. It wraps blob.ErrNotFound and, like it, means genuine
	// absence only: a store fault is returned as a different error.
	ErrNoCheckpoint = fmt.Errorf("runstore: no checkpoint: %w", blob.ErrNotFound)
	// ErrSeqTaken reports a Save whose sequence number already holds a
	// different checkpoint. It wraps blob.ErrExists.
	ErrSeqTaken = fmt.Errorf("runstore: checkpoint sequence number already taken: %w", blob.ErrExists)
)

// Store keeps runs' checkpoints, and finds and deletes everything else a
// run stored, in a blob store. Checkpoints are immutable records numbered
// by Checkpoint.Seq; each is written create-only, so two writers can never
// both take one sequence number, and a retried Save of the same checkpoint
// succeeds.
type Store struct {
	b      blob.Store
	key    []byte
	blocks writtenBlocks
}

// MaxCheckpointBytes bounds what Get reads of one checkpoint: far above
// any checkpoint Temporal could carry (its payloads stop at a few MiB),
// so an endless or huge object at a checkpoint key cannot exhaust memory.
const MaxCheckpointBytes = 64 << 20

// Option configures a Store.
type Option func(*Store)

// WithKey authenticates checkpoints with key (KeySize bytes): Save writes
// each with an HMAC-SHA256 that binds the run and sequence number, and
// Get refuses a checkpoint whose MAC is missing (ErrUnsignedCheckpoint)
// or wrong (ErrCheckpointAuth). A nil key leaves the store trusted.
func WithKey(key []byte) Option {
	return func(s *Store) {
		if key != nil {
			s.key = append([]byte(nil), key...)
		}
	}
}

// New returns a run store over b. A key of the wrong length panics: it is
// checked where it is read (config), so this is a programming error.
func New(b blob.Store, opts ...Option) *Store {
	s := &Store{b: b}
	for _, o := range opts {
		o(s)
	}
	if err := ValidKey(s.key); err != nil {
		panic(err)
	}
	return s
}

// Authenticated reports whether the store signs and verifies checkpoints.
func (s *Store) Authenticated() bool { return s.key != nil }

// Blobs returns the underlying blob store, where session blobs live.
func (s *Store) Blobs() blob.Store { return s.b }

// CheckpointInfo describes one stored checkpoint without reading it.
type CheckpointInfo struct {
	Seq     int64
	Key     string
	Size    int64
	ModTime time.Time
}

// DeleteReport says what DeleteRun removed.
type DeleteReport struct {
	Run         string
	Checkpoints int
	// Sessions counts session blobs, completed-visit and pause alike;
	// Pauses counts the pause blobs among them.
	Sessions int
	Pauses   int
	// WorkspacePacks counts the workspace packs.
	WorkspacePacks int
	// PathBlocks counts the stored blocks of the run's path.
	PathBlocks int
	// Other counts keys under the run's prefix that fit no known shape.
	Other int
	Total int
	// Keys lists every removed key, sorted.
	Keys []string
}

// Save writes cp as checkpoint cp.Seq (≥ 1) of run. cp.RunID must be run
// or empty. Saving the identical checkpoint again succeeds; a different
// checkpoint under a taken sequence number fails with ErrSeqTaken.
func (s *Store) Save(ctx context.Context, run string, cp *Checkpoint) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	if cp == nil {
		return fmt.Errorf("runstore: save run %q: nil checkpoint", run)
	}
	if cp.Seq < 1 {
		return fmt.Errorf("runstore: save run %q: checkpoint sequence number %d; it must be 1 or more", run, cp.Seq)
	}
	if cp.RunID != "" && cp.RunID != run {
		return fmt.Errorf("runstore: save run %q: the checkpoint belongs to run %q", run, cp.RunID)
	}
	c := *cp
	c.RunID = run
	full := c
	if err := s.splitPath(ctx, run, &c); err != nil {
		return fmt.Errorf("runstore: save run %q checkpoint %d: %w", run, cp.Seq, err)
	}
	plain, err := Encode(&c)
	if err != nil {
		return fmt.Errorf("runstore: save run %q checkpoint %d: %w", run, cp.Seq, err)
	}
	b := Compress(plain)
	if s.key != nil {
		b = Seal(s.key, run, cp.Seq, b)
	}
	err = blob.PutBytes(ctx, s.b, checkpointKey(run, cp.Seq), b, blob.CreateOnly())
	if errors.Is(err, blob.ErrExists) {
		// A workflow task that saved this checkpoint and then died with
		// its worker is run again, and its clock has moved on: the same
		// state, its steps timed anew. The first save stands.
		if have, gerr := s.Get(ctx, run, cp.Seq); gerr == nil && sameButTiming(have, &full) {
			return nil
		}
		return fmt.Errorf("%w: run %q checkpoint %d holds a different checkpoint", ErrSeqTaken, run, cp.Seq)
	}
	if err != nil {
		return fmt.Errorf("runstore: save run %q checkpoint %d: %w", run, cp.Seq, err)
	}
	return nil
}

// Get reads checkpoint seq of run.
func (s *Store) Get(ctx context.Context, run string, seq int64) (*Checkpoint, error) {
	cp, err := s.getBare(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	s.joinPath(ctx, run, cp)
	return cp, nil
}

// Peek reads checkpoint seq of run as Get does, but leaves its path blocks
// unread: its Path holds only the steps stored inline (the newest, fewer
// than PathBlockSteps of them when the path has blocks), while PathTotal
// still counts every step. It is what a list of runs, or a search through
// a run's checkpoints, needs.
func (s *Store) Peek(ctx context.Context, run string, seq int64) (*Checkpoint, error) {
	cp, err := s.getBare(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	if len(cp.PathBlocks) > 0 {
		at := min(max(cp.PathBlocksAt, 0), len(cp.Path))
		cp.Path = cp.Path[at:]
		cp.PathBlocks, cp.PathBlocksAt = nil, 0
	}
	return cp, nil
}

// getBare is Get without the path's stored blocks: enough to read a
// checkpoint's status, cursor and lineage.
func (s *Store) getBare(ctx context.Context, run string, seq int64) (*Checkpoint, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	if seq < 1 {
		return nil, fmt.Errorf("%w: run %q has no checkpoint %d; sequence numbers start at 1", ErrNoCheckpoint, run, seq)
	}
	raw, err := s.read(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	b, err := Unseal(s.key, run, seq, raw)
	if errors.Is(err, ErrUnsignedCheckpoint) {
		return nil, fmt.Errorf("runstore: run %q checkpoint %d: %w; it was written without %s (before checkpoints were signed?): if you trust the store's current content, sign the run's checkpoints with `tether store sign %s`", run, seq, err, KeyEnv, run)
	}
	if err != nil {
		return nil, fmt.Errorf("runstore: run %q checkpoint %d: %w", run, seq, err)
	}
	plain, err := Decompress(b)
	if err != nil {
		return nil, corrupt(run, seq, err)
	}
	cp, err := Decode(plain)
	if err != nil {
		return nil, fmt.Errorf("runstore: run %q checkpoint %d: %w", run, seq, err)
	}
	if cp.RunID != run || cp.Seq != seq {
		return nil, fmt.Errorf("runstore: run %q checkpoint %d holds run %q checkpoint %d; the store is corrupt", run, seq, cp.RunID, cp.Seq)
	}
	return cp, nil
}

// corrupt says what to do about a checkpoint Decompress refused.
func corrupt(run string, seq int64, err error) error {
	return fmt.Errorf("runstore: run %q checkpoint %d (%s): %w; it was cut short, changed, or not written by tether: restore the object from a backup of the store", run, seq, checkpointKey(run, seq), err)
}

// read returns the stored bytes of checkpoint seq of run, capped.
func (s *Store) read(ctx context.Context, run string, seq int64) ([]byte, error) {
	b, err := blob.GetBytesMax(ctx, s.b, checkpointKey(run, seq), MaxCheckpointBytes)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("%w: run %q checkpoint %d", ErrNoCheckpoint, run, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("runstore: read run %q checkpoint %d: %w", run, seq, err)
	}
	return b, nil
}

// List returns run's checkpoints, oldest first. A run without any has an
// empty list and no error.
func (s *Store) List(ctx context.Context, run string) ([]CheckpointInfo, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	infos, err := s.b.List(ctx, checkpointsPrefix(run))
	if err != nil {
		return nil, fmt.Errorf("runstore: list run %q checkpoints: %w", run, err)
	}
	out := make([]CheckpointInfo, 0, len(infos))
	for _, in := range infos {
		seq, ok := parseCheckpointName(path.Base(in.Key))
		if !ok || in.Key != checkpointKey(run, seq) {
			return nil, fmt.Errorf("runstore: run %q: %q is not a checkpoint key; the store is corrupt or shared", run, in.Key)
		}
		out = append(out, CheckpointInfo{Seq: seq, Key: in.Key, Size: in.Size, ModTime: in.ModTime})
	}
	return out, nil // keys are zero-padded, so key order is sequence order
}

// Latest reads run's checkpoint with the highest sequence number, or
// returns ErrNoCheckpoint.
func (s *Store) Latest(ctx context.Context, run string) (*Checkpoint, error) {
	infos, err := s.List(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("%w: run %q has none", ErrNoCheckpoint, run)
	}
	return s.Get(ctx, run, infos[len(infos)-1].Seq)
}

// DeleteRun removes every blob under the run's prefix: checkpoints,
// completed-visit and pause session blobs, and anything else. Checkpoints
// go first, oldest first, so an interrupted delete never leaves a
// resumable checkpoint whose session blobs are already gone, and Latest
// keeps naming the newest checkpoint until the last one goes. Deleting a
// run that has nothing stored reports zeros and succeeds, so a retried
// delete is harmless. Blobs written while the delete runs are swept in up
// to three rounds.
func (s *Store) DeleteRun(ctx context.Context, run string) (DeleteReport, error) {
	rep := DeleteReport{Run: run}
	if err := ValidateRunID(run); err != nil {
		return rep, err
	}
	prefix := RunPrefix(run)
	for round := 0; round < 3; round++ {
		infos, err := s.b.List(ctx, prefix)
		if err != nil {
			return rep, fmt.Errorf("runstore: delete run %q: %w", run, err)
		}
		if len(infos) == 0 {
			sort.Strings(rep.Keys)
			return rep, nil
		}
		cps := checkpointsPrefix(run)
		sort.SliceStable(infos, func(i, j int) bool {
			ci, cj := strings.HasPrefix(infos[i].Key, cps), strings.HasPrefix(infos[j].Key, cps)
			return ci && !cj
		})
		for _, in := range infos {
			if err := s.b.Delete(ctx, in.Key); err != nil {
				sort.Strings(rep.Keys)
				return rep, fmt.Errorf("runstore: delete run %q: %w", run, err)
			}
			rep.count(run, in.Key)
		}
	}
	sort.Strings(rep.Keys)
	return rep, fmt.Errorf("runstore: delete run %q: blobs keep appearing under %s; is the run still active?", run, prefix)
}

func (r *DeleteReport) count(run, key string) {
	r.Keys = append(r.Keys, key)
	r.Total++
	if strings.HasPrefix(key, checkpointsPrefix(run)) {
		r.Checkpoints++
		return
	}
	if isPathBlockKey(run, key) {
		r.PathBlocks++
		return
	}
	switch kind, _, _ := ParseRef(run, key); kind {
	case RefSession:
		r.Sessions++
	case RefPause:
		r.Sessions++
		r.Pauses++
	case RefWorkspacePack:
		r.WorkspacePacks++
	default:
		r.Other++
	}
}

// ListRuns returns the ids of every run with anything stored, sorted.
func (s *Store) ListRuns(ctx context.Context) ([]string, error) {
	infos, err := s.b.List(ctx, runsPrefix)
	if err != nil {
		return nil, fmt.Errorf("runstore: list runs: %w", err)
	}
	seen := map[string]bool{}
	var runs []string
	for _, in := range infos {
		run, _, _ := strings.Cut(strings.TrimPrefix(in.Key, runsPrefix), "/")
		if !seen[run] {
			seen[run] = true
			runs = append(runs, run)
		}
	}
	sort.Strings(runs)
	return runs, nil
}

// sameButTiming reports whether two checkpoints hold the same state,
// whatever the workflow clock said of their steps (StartedAt, DurationMS):
// the only fields that differ when a lost workflow task is run again.
func sameButTiming(a, b *Checkpoint) bool {
	untimed := func(cp *Checkpoint) []byte {
		c := *cp
		c.Path = slices.Clone(cp.Path)
		for i := range c.Path {
			c.Path[i].StartedAt, c.Path[i].DurationMS = "", 0
		}
		out, err := Encode(&c)
		if err != nil {
			return nil
		}
		return out
	}
	x, y := untimed(a), untimed(b)
	return x != nil && bytes.Equal(x, y)
}
