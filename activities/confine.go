package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox"
)

// ErrTypeSandboxRefused: a worker without namespaces will not run a node
// whose promises it cannot keep (permissions: full, a network setting)
// unless its operator turned confinement off. The visit fails; run it on
// a worker with the full sandbox.
const ErrTypeSandboxRefused = "SandboxRefused"

// ErrTypePathRefused: the sandbox refused a path the visit would run or
// be given: a program named through "..", or leading outside where a
// confined program may come from (agent.ErrPathRefused). The visit fails
// before anything starts.
const ErrTypePathRefused = "PathRefused"

// ErrTypeWorkdirRefused: an agent's workdir this worker will not run in:
// an absolute one outside the roots its operator names
// (TETHER_WORKDIR_ROOTS), one holding or inside the worker's own
// directories, or one that leads out of its root through a link.
const ErrTypeWorkdirRefused = "WorkdirRefused"

// NetworkRefusedKey is the output key that lists what the visit's egress
// proxy refused: each request and why, never any data.
const NetworkRefusedKey = "_network_refused"

// confineVisit admits the node under the worker's sandbox and puts its
// network and limits in the context its processes start from.
func (a *Activities) confineVisit(ctx context.Context, node graph.Node) (context.Context, *sandbox.Visit, error) {
	full := node.Kind == graph.KindAgent && node.Permissions == agent.PermissionFull
	if err := a.Sandbox.Admit(node.ID, full, node.Network != nil); err != nil {
		return ctx, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSandboxRefused, err)
	}
	v := &sandbox.Visit{Node: node.ID, Model: node.Kind == graph.KindAgent}
	if n := node.Network; n != nil {
		switch n.Mode {
		case graph.NetworkModel:
			v.Model = true
		case graph.NetworkNone:
			v.Model = false
		default:
			allow, err := hostport.ParsePatterns(n.Allow)
			if err != nil {
				return ctx, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q: %v", node.ID, err), ErrTypeBadRequest, err)
			}
			v.Allow = allow
		}
	}
	if l := node.Limits; l != nil {
		mem, err := l.MemoryBytes()
		if err != nil {
			return ctx, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q: limits: %v", node.ID, err), ErrTypeBadRequest, err)
		}
		disk, err := l.DiskBytes()
		if err != nil {
			return ctx, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q: limits: %v", node.ID, err), ErrTypeBadRequest, err)
		}
		v.Limits = sandbox.Limits{MemoryBytes: mem, Pids: l.Pids, CPU: l.CPU, DiskBytes: disk}
	}
	return sandbox.WithVisit(ctx, v), v, nil
}

// noteRefused puts what the visit's proxy refused on its output.
func noteRefused(out map[string]any, v *sandbox.Visit) {
	if r := v.Refused(); len(r) > 0 && out != nil {
		out[NetworkRefusedKey] = r
	}
}
