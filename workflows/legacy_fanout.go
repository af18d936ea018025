package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// The fan-out below serves only executions recorded before the
// branch-workspaces change (branches.go picks it for them). It goes once
// no open execution can still reach that branch (docs/operations.md,
// "Retiring a change id").

// fanoutShared is the fan-out of runs recorded before branch workspaces:
// each branch visit runs on a throwaway copy of the trunk's workspace.
func (r *runImpl) fanoutShared(ctx workflow.Context, starts []runstore.Cursor) (runstore.Cursor, error) {
	type branch struct {
		join string
		last string
		out  map[string]any
		err  error
	}
	results := make([]*branch, len(starts))
	wg := workflow.NewWaitGroup(ctx)
	for i, start := range starts {
		b := &branch{}
		results[i] = b
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			b.join, b.last, b.out, b.err = r.branch(ctx, start)
		})
	}
	wg.Wait(ctx)
	join := ""
	joined := map[string]any{}
	for _, b := range results {
		if b.err != nil {
			return runstore.Cursor{}, b.err
		}
		if join != "" && b.join != join {
			return runstore.Cursor{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branches meet at different joins (%q and %q); every branch of one fan-out must reach the same join", join, b.join), runapi.ErrTypeGraph, nil)
		}
		join = b.join
		joined[b.last] = b.out
	}
	input := map[string]any{"branches": joined}
	return runstore.Cursor{Node: join, Input: input, From: starts[0].From}, nil
}

// branch walks one fan-out branch of fanoutShared to its join.
func (r *runImpl) branch(ctx workflow.Context, cur runstore.Cursor) (join, last string, out map[string]any, err error) {
	nestedJoin := ""
	for {
		node, ok := r.g.Node(cur.Node)
		if !ok {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("edge leads to unknown node %q", cur.Node), runapi.ErrTypeGraph, nil)
		}
		if node.Kind == graph.KindJoin && node.ID != nestedJoin {
			return node.ID, last, out, nil
		}
		nestedJoin = ""
		if node.Kind == graph.KindEnd {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branch reached end node %q before a join", node.ID), runapi.ErrTypeGraph, nil)
		}
		if node.Session == graph.SessionPersist {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q has session: persist inside a fan-out branch; a persist conversation cannot run in parallel branches (move it out of the fan-out)", node.ID), runapi.ErrTypeGraph, nil)
		}
		v, err := r.visit(ctx, node, cur, &scope{branch: true})
		if err != nil {
			return "", "", nil, err
		}
		r.deleteBlobs(ctx, v.deleteAfterCommit)
		next, err := r.selectNext(node, cur, v.output)
		if err != nil {
			return "", "", nil, err
		}
		if len(next) > 1 {
			j, err := r.fanoutShared(ctx, next)
			if err != nil {
				return "", "", nil, err
			}
			// The nested fan-out's join is visited inside this branch.
			cur, nestedJoin = j, j.Node
			continue
		}
		last, out, cur = node.ID, v.output, next[0]
	}
}
