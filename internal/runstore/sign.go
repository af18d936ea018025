package runstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether-run/tether/internal/blob"
)

// ErrNoKey reports a Sign on a store without a checkpoint key.
var ErrNoKey = errors.New("runstore: no checkpoint key is configured")

// SignReport says what Sign did to one run's checkpoints.
type SignReport struct {
	Run string
	// Signed are the sequence numbers that were re-written with a MAC;
	// AlreadySigned those whose MAC already verified.
	Signed        []int64
	AlreadySigned []int64
}

// Sign is the migration of a run written before checkpoints were signed:
// it re-writes each checkpoint of run that carries no MAC with one, after
// checking that it decodes and names its own run and sequence number. The
// operator who runs it vouches for the store's current content: an
// unsigned checkpoint cannot be told from a forged one. A checkpoint whose
// MAC fails is never re-signed (ErrCheckpointAuth): it was changed, or
// signed under another key. Signing twice is harmless.
func (s *Store) Sign(ctx context.Context, run string) (*SignReport, error) {
	if s.key == nil {
		return nil, fmt.Errorf("%w: set %s on every worker and here, then sign", ErrNoKey, KeyEnv)
	}
	infos, err := s.List(ctx, run)
	if err != nil {
		return nil, err
	}
	rep := &SignReport{Run: run}
	for _, info := range infos {
		raw, err := s.read(ctx, run, info.Seq)
		if err != nil {
			return rep, err
		}
		if Signed(raw) {
			if _, err := Unseal(s.key, run, info.Seq, raw); err != nil {
				return rep, fmt.Errorf("runstore: run %q checkpoint %d: %w; refusing to re-sign it", run, info.Seq, err)
			}
			rep.AlreadySigned = append(rep.AlreadySigned, info.Seq)
			continue
		}
		plain, err := Decompress(raw)
		if err != nil {
			return rep, corrupt(run, info.Seq, err)
		}
		cp, err := Decode(plain)
		if err != nil {
			return rep, fmt.Errorf("runstore: run %q checkpoint %d: %w", run, info.Seq, err)
		}
		if cp.RunID != run || cp.Seq != info.Seq {
			return rep, fmt.Errorf("%w: run %q checkpoint %d holds run %q checkpoint %d", ErrInvalidCheckpoint, run, info.Seq, cp.RunID, cp.Seq)
		}
		// The exact bytes are signed, not a re-encoding, so nothing the
		// record holds changes: bare JSON stays JSON, a frame stays a frame.
		if err := blob.PutBytes(ctx, s.b, info.Key, Seal(s.key, run, info.Seq, raw)); err != nil {
			return rep, fmt.Errorf("runstore: sign run %q checkpoint %d: %w", run, info.Seq, err)
		}
		rep.Signed = append(rep.Signed, info.Seq)
	}
	return rep, nil
}
