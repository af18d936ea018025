package runstore

import (
	"context"
	"errors"
	"fmt"
)

// A run id names one run. A new run (`tether run`, `tether fork`, or a
// GraphRun a plain Temporal client starts without a checkpoint) may take
// an id only when neither Temporal nor the run store knows it, open or
// closed: a second run under a taken id would mix its checkpoints, blobs
// and path with the first's. Resume and rewind continue the run the id
// already names, so they do not ask.

// ErrRunIDTaken reports a new run whose id another run already has.
var ErrRunIDTaken = errors.New("run id taken")

// RunIDTaken is the error for a new run whose id is held by what holder
// describes ("the run store holds …", "Temporal has …"): what happened,
// and the two ways on.
func RunIDTaken(run, holder string) error {
	return fmt.Errorf("%w: %s; a run id names one run: start the new run with another id, or remove the old run (its checkpoints, blobs and Temporal history) with `tether delete %s` first", ErrRunIDTaken, holder, run)
}

// Holder says what of run the store holds, "" when it holds no
// checkpoint of it: `the run store holds 8 checkpoints of run "b1" (graph
// "three-way", completed)`.
func (s *Store) Holder(ctx context.Context, run string) (string, error) {
	infos, err := s.List(ctx, run)
	if err != nil || len(infos) == 0 {
		return "", err
	}
	what := fmt.Sprintf("the run store holds %d checkpoint(s) of run %q", len(infos), run)
	// The latest says which graph and how it stands; one that cannot be
	// read still holds the id.
	if cp, err := s.Get(ctx, run, infos[len(infos)-1].Seq); err == nil {
		what += fmt.Sprintf(" (graph %q, %s)", cp.GraphName(), cp.Status)
	}
	return what, nil
}
