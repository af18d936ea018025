package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// receiveGuidance keeps the notes people send agent nodes with the guide
// signal, in the checkpoint, until their node's next visit takes them.
func (r *runImpl) receiveGuidance(ctx workflow.Context) {
	receiveEach(ctx, runapi.SignalGuide, func(ctx workflow.Context, gd runapi.Guide) {
		if err := r.addGuidance(ctx, gd); err != nil {
			workflow.GetLogger(ctx).Warn("guide signal ignored", "node", gd.Node, "error", err.Error())
		}
	})
}

func (r *runImpl) addGuidance(ctx workflow.Context, gd runapi.Guide) error {
	if err := CheckGuide(r.g, gd); err != nil {
		return err
	}
	waiting := 0
	for _, n := range r.cp.Guidance {
		if n.Node == gd.Node {
			waiting++
		}
	}
	if waiting >= runapi.MaxGuidance {
		return fmt.Errorf("node %q already has %d notes waiting for its next visit", gd.Node, waiting)
	}
	text := strings.TrimSpace(gd.Text)
	if len(text) > runapi.MaxGuideText {
		text = strings.ToValidUTF8(text[:runapi.MaxGuideText], "") + " …"
	}
	r.cp.Guidance = append(r.cp.Guidance, runstore.Guidance{
		Node: gd.Node, Text: text, By: oneLine(gd.By, 80), At: workflow.Now(ctx).UTC().Format(time.RFC3339),
	})
	return nil
}

// guidanceFor is what node's visit takes: the notes waiting for it, in the
// order sent (none for runs recorded before changeGuide).
func (r *runImpl) guidanceFor(ctx workflow.Context, node string) []runstore.Guidance {
	var out []runstore.Guidance
	for _, n := range r.cp.Guidance {
		if n.Node == node {
			out = append(out, n)
		}
	}
	if len(out) == 0 || !r.at(ctx, changeGuide, versionGuide) {
		return nil
	}
	return out
}

// tookGuidance forgets the notes a committed visit of node took: the
// first len(took) of that node's (newer ones wait for the next visit).
func (r *runImpl) tookGuidance(node string, took []runstore.Guidance) {
	n := len(took)
	kept := r.cp.Guidance[:0]
	for _, g := range r.cp.Guidance {
		if g.Node == node && n > 0 {
			n--
			continue
		}
		kept = append(kept, g)
	}
	r.cp.Guidance = kept
	if len(r.cp.Guidance) == 0 {
		r.cp.Guidance = nil
	}
}

func guidanceTexts(gs []runstore.Guidance) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Text
	}
	return out
}

// CheckGuide says why a note cannot go to its node (runapi.CheckGuide).
func CheckGuide(g *graph.Graph, gd runapi.Guide) error { return runapi.CheckGuide(g, gd) }
