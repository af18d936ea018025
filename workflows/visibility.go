package workflows

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
)

// SearchAttributeTypes are the search attributes to register in a
// namespace (workers do it at start; `temporal operator search-attribute
// create` does it by hand).
var SearchAttributeTypes = map[string]enumspb.IndexedValueType{
	runapi.SearchGraph.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	runapi.SearchNode.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	runapi.SearchStatus.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	runapi.SearchBackends.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
	runapi.SearchThread.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}

// searchAttributesReady is set by a worker once Tether's search attributes
// are registered in its namespace. A run reads it once, through a side
// effect, and upserts its search attributes only if it was set: upserting
// an unregistered attribute would fail every workflow task of the run.
var searchAttributesReady atomic.Bool

// SetSearchAttributesReady tells runs started on this worker that the
// search attributes exist.
func SetSearchAttributesReady(ready bool) { searchAttributesReady.Store(ready) }

// visibility keeps a run legible in the Temporal Web UI and CLI: its
// search attributes and its current details.
type visibility struct {
	on     bool
	node   string
	status string
}

// startVisibility decides, once per execution, whether this run keeps
// search attributes, and sets the ones known from the start.
func (r *runImpl) startVisibility(ctx workflow.Context) {
	var ready bool
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return searchAttributesReady.Load() }).Get(&ready); err != nil {
		workflow.GetLogger(ctx).Warn("could not read whether search attributes are registered; not setting them", "error", err.Error())
	}
	r.vis.on = ready
	if !ready {
		return
	}
	var backends []string
	for _, n := range r.g.Nodes {
		for _, b := range append([]string{n.Backend}, n.Fallback...) {
			if b != "" && !slices.Contains(backends, b) {
				backends = append(backends, b)
			}
		}
	}
	slices.Sort(backends)
	updates := []temporal.SearchAttributeUpdate{runapi.SearchGraph.ValueSet(r.g.Name), runapi.SearchBackends.ValueSet(backends)}
	r.vis.status = r.cp.Status
	updates = append(updates, runapi.SearchStatus.ValueSet(r.cp.Status))
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("could not set search attributes", "error", err.Error())
	}
	r.details(ctx)
}

// setNode records the node being visited.
func (r *runImpl) setNode(ctx workflow.Context, node string) {
	if r.vis.on && node != r.vis.node {
		r.vis.node = node
		upsertKeyword(ctx, runapi.SearchNode, node)
	}
	r.details(ctx)
}

// upsertKeyword sets one keyword search attribute, and warns when it
// cannot.
func upsertKeyword(ctx workflow.Context, key temporal.SearchAttributeKeyKeyword, value string) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, key.ValueSet(value)); err != nil {
		workflow.GetLogger(ctx).Warn("could not set search attribute", "name", key.GetName(), "error", err.Error())
	}
}

// setStatus records the run's status (running, waiting, failed_resumable,
// failed, completed).
func (r *runImpl) setStatus(ctx workflow.Context, status string) {
	if r.vis.on && status != r.vis.status {
		r.vis.status = status
		upsertKeyword(ctx, runapi.SearchStatus, status)
	}
	r.details(ctx)
	r.reportGitHub(ctx)
}

// details are the run's current details in the Web UI: the node being
// visited and the questions waiting for an answer, with how to answer.
func (r *runImpl) details(ctx workflow.Context) {
	if !r.vis.on {
		return
	}
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s** · %s", r.g.Name, r.cp.Status))
	if len(r.current) > 0 {
		b.WriteString(fmt.Sprintf(" · at %s", strings.Join(r.current, ", ")))
	}
	b.WriteString("\n")
	for _, q := range r.questions {
		if !q.Answered {
			b.WriteString(fmt.Sprintf("\n- %s asks (%s): %s\n  `tether answer %s %s TEXT`", q.Node, q.ID, oneLine(q.Text, 200), r.cp.RunID, q.ID))
		}
	}
	b.WriteString(r.retryDetails())
	workflow.SetCurrentDetails(ctx, b.String())
}

// visitSummary names a visit's activity in the Web UI and the CLI.
func visitSummary(node *graph.Node, visitNo int, backendName string) string {
	s := fmt.Sprintf("%s visit %d", node.ID, visitNo)
	if node.Kind == graph.KindTool {
		return s + " · tool · " + oneLine(strings.Join(node.Run, " "), 60)
	}
	s += " · " + backendName
	if node.Session != graph.SessionFresh {
		s += " · " + node.Session.String()
	}
	return s
}

// branchSuffix names a visit's fan-out branch in its summary.
func branchSuffix(sc *scope) string {
	if sc.name == "" {
		return ""
	}
	return " · branch " + sc.name
}

// oneLine is the first line of s, with " …" when more lines follow, its
// first max bytes kept and "…" after them when it is longer. It is not
// internal/excerpt's Line: activity summaries are made with it, and a
// replay must name every activity as the recorded run did
// (TestReplayResumesTheSameConversations), byte for byte.
func oneLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
