package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
)

// toolVisit runs a tool node's command in the run's workspace, in one
// activity on any worker.
func (r *runImpl) toolVisit(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, sc *scope) (visitResult, error) {
	// A tool visit is given no blob keys, so no attempt leaves any.
	res, _, err := r.oneTrip(ctx, node, visitNo, resolve.Plan{Kind: resolve.Fresh, Input: cur.Input}, nil, nil, visitExtras{}, sc)
	if err != nil {
		return visitResult{}, err
	}
	r.takeWorkspace(res, sc)
	return visitResult{output: res.Output}, nil
}
