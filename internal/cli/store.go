package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// temporalGraph is the graph run id executes as its latest execution's own
// workflow input records it: what resume and rewind run, in preference to
// the copy in a checkpoint, because Temporal's history is trusted and the
// bucket is not. ok is false when Temporal no longer holds the run (past
// its retention); the checkpoint's graph, authenticated by its MAC when a
// key is set, is then all there is.
func (a *app) temporalGraph(ctx context.Context, id string) (g *graph.Graph, ok bool, err error) {
	c, err := a.temporal()
	if err != nil {
		return nil, false, err
	}
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, false, nil
	}
	ev, err := it.Next()
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read run %s's history: %w", id, err)
	}
	started := ev.GetWorkflowExecutionStartedEventAttributes()
	if started == nil || len(started.GetInput().GetPayloads()) == 0 {
		return nil, false, fmt.Errorf("run %s's history does not start with its input", id)
	}
	var in runapi.GraphRunInput
	if err := converter.GetDefaultDataConverter().FromPayload(started.GetInput().GetPayloads()[0], &in); err != nil {
		return nil, false, fmt.Errorf("decode run %s's workflow input: %w", id, err)
	}
	switch {
	case in.Checkpoint != nil:
		g, err := graph.FromJSON(in.Checkpoint.Graph)
		if err != nil {
			return nil, false, fmt.Errorf("run %s's workflow input: %w", id, err)
		}
		return g, true, nil
	case in.Graph != nil:
		return in.Graph, true, nil
	}
	return nil, false, fmt.Errorf("run %s's workflow input names no graph", id)
}

// trustedGraph replaces cp's graph by the run's own from Temporal, when
// Temporal still holds it, and says where the graph came from.
func (a *app) trustedGraph(ctx context.Context, id string, cp *runstore.Checkpoint) (string, error) {
	g, ok, err := a.temporalGraph(ctx, id)
	if err != nil {
		return "", failedErr(err)
	}
	if !ok {
		return "the run store", nil
	}
	if err := runapi.SetGraph(cp, g); err != nil {
		return "", failedErr(err)
	}
	return "the run's workflow input", nil
}

func (a *app) storeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Maintain the run store",
	}
	sign := &cobra.Command{
		Use:   "sign RUN...",
		Short: "Sign the checkpoints of runs written before " + runstore.KeyEnv + " was set",
		Long: `Sign re-writes every checkpoint of each RUN that carries no MAC with one,
under ` + runstore.KeyEnv + `. It is the one-time migration of runs written before
checkpoints were authenticated: with the key set, tether and the workers
refuse such checkpoints.

Signing vouches for what the store holds now: an unsigned checkpoint cannot
be told from a forged one. Sign only runs whose store nobody else could
write to. A checkpoint whose MAC fails is never re-signed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			runs, err := a.store(ctx)
			if err != nil {
				return failedErr(err)
			}
			if !runs.Authenticated() {
				return usageErr("%s is not set: there is nothing to sign with (set it to the key the workers use)", runstore.KeyEnv)
			}
			for _, id := range args {
				rep, err := runs.Sign(ctx, id)
				if err != nil {
					return failedErr(fmt.Errorf("sign run %s: %w", id, err))
				}
				fmt.Fprintf(a.out, "run %s: %d checkpoint(s) signed, %d already signed\n", id, len(rep.Signed), len(rep.AlreadySigned))
			}
			return nil
		},
	}
	cmd.AddCommand(sign)
	return cmd
}
