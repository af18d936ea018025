package runstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The rule for rewinds (ADR-089: "checkpoint without the dropped refs
// first, then delete blobs"), which every command follows:
//
// `tether rewind RUN --to T` writes a new checkpoint A, a copy of T, first;
// then it deletes every blob that only checkpoints after T named. The
// checkpoints between T and A are then *dropped by that rewind*: they stay
// listed (`tether checkpoints` marks them), but the session blobs and
// workspace packs they need may be gone, so rewind --to, fork --at and
// workspace --at refuse them and say which rewind dropped them. Every
// other checkpoint, T and A among them, is whole. A rewind to a
// checkpoint at which the run had ended (nothing left to visit) is
// refused: nothing would run.

var (
	// ErrDropped reports a checkpoint that a rewind dropped.
	ErrDropped = errors.New("runstore: checkpoint dropped by a rewind")
	// ErrNothingToRun reports a rewind to a checkpoint at which the run
	// had already ended.
	ErrNothingToRun = errors.New("runstore: nothing would run")
)

// Drop is what one rewind of a run dropped: the checkpoints after To (the
// checkpoint it rewound to) and before At (the one it wrote).
type Drop struct {
	To int64 `json:"to"`
	At int64 `json:"at"`
}

// Covers reports whether the rewind dropped checkpoint seq.
func (d Drop) Covers(seq int64) bool { return d.To < seq && seq < d.At }

// DroppedError says that d dropped checkpoints of run, and
// which checkpoints are whole instead.
func DroppedError(run string, d Drop) error {
	return fmt.Errorf("%w: the rewind to checkpoint %d, which wrote checkpoint %d, dropped checkpoints %d to %d and deleted the blobs only they named; use checkpoint %d or earlier, or %d or later (`tether checkpoints %s` marks the dropped ones)",
		ErrDropped, d.To, d.At, d.To+1, d.At-1, d.To, d.At, run)
}

// Drops lists the rewinds of run, oldest first, and what each dropped. It
// reads every checkpoint of the run, without their paths' blocks. A
// checkpoint tether did not write (invalid) is no rewind of tether's: it
// is passed over here, and refused where it is itself read.
func (s *Store) Drops(ctx context.Context, run string) ([]Drop, error) {
	infos, err := s.List(ctx, run)
	if err != nil {
		return nil, err
	}
	var drops []Drop
	// Rewinds written before Lineage.At: the first checkpoint carrying
	// the rewind's lineage is the one it wrote.
	first := map[int64]int64{}
	for _, info := range infos {
		cp, err := s.getBare(ctx, run, info.Seq)
		if errors.Is(err, ErrInvalidCheckpoint) || errors.Is(err, ErrCheckpointAuth) {
			continue
		}
		if err != nil {
			return nil, err
		}
		l := cp.Lineage
		if l == nil || l.Kind != "rewind" || l.Run != run || l.Seq >= cp.Seq {
			continue
		}
		switch {
		case l.At != 0:
			if d := (Drop{To: l.Seq, At: l.At}); !slices.Contains(drops, d) {
				drops = append(drops, d)
			}
		case first[l.Seq] == 0:
			first[l.Seq] = cp.Seq
			drops = append(drops, Drop{To: l.Seq, At: cp.Seq})
		}
	}
	return drops, nil
}

// DroppedBy returns the first rewind that dropped checkpoint seq of run,
// if one did.
func (s *Store) DroppedBy(ctx context.Context, run string, seq int64) (Drop, bool, error) {
	drops, err := s.Drops(ctx, run)
	if err != nil {
		return Drop{}, false, err
	}
	for _, d := range drops {
		if d.Covers(seq) {
			return d, true, nil
		}
	}
	return Drop{}, false, nil
}

// GetWhole reads checkpoint seq of run for a command that will use its
// blobs (fork, workspace): a checkpoint a rewind dropped is refused with
// DroppedError.
func (s *Store) GetWhole(ctx context.Context, run string, seq int64) (*Checkpoint, error) {
	cp, err := s.Get(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	d, dropped, err := s.DroppedBy(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	if dropped {
		return nil, DroppedError(run, d)
	}
	return cp, nil
}

// ended refuses a rewind to cp when the run had ended there.
func ended(run string, cp *Checkpoint) error {
	if len(cp.Cursor) > 0 {
		return nil
	}
	return fmt.Errorf("%w: the run ended at checkpoint %d (%s) with nothing left to visit; rewind to an earlier checkpoint (`tether checkpoints %s`), or fork the run to run it again", ErrNothingToRun, cp.Seq, cp.Status, run)
}
