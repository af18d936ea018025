package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

func (a *app) guideCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "guide RUN NODE TEXT",
		Short: "Send a note to an agent node's next visit",
		Long: `Send a note to agent node NODE of a running run. The node's next visit gets
it after its prompt, as guidance from a person watching the run; the run's
history records it (the "guide" signal), and the visit's path step, its
page in the console and tether status show it. A note sent while the node
is being visited waits for its next visit.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := a.guide(cmd.Context(), args[0], args[1], args[2], "")
			if err != nil {
				return err
			}
			fmt.Fprintln(a.out, msg)
			return nil
		},
	}
}

// guide checks the note against the run's graph (the workflow would
// ignore a note it cannot deliver) and sends it as the guide signal; by
// names who sends it (the OS user when empty). `tether guide` and the
// console use it.
func (a *app) guide(ctx context.Context, id, node, text, by string) (string, error) {
	d, err := a.describe(ctx, id)
	if err != nil {
		return "", failedErr(fmt.Errorf("describe run %s: %w", id, err))
	}
	if statusOf(d) != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "", usageErr("run %s is not running, so no visit would read the note; resume or rewind it first", id)
	}
	g, err := a.runGraph(ctx, id)
	if err != nil {
		return "", err
	}
	gd := runapi.Guide{Node: node, Text: text, By: by}
	if gd.By == "" {
		gd.By = osUser()
	}
	if err := runapi.CheckGuide(g, gd); err != nil {
		return "", usageErr("run %s: %v", id, err)
	}
	if from, ok := a.whereRunIs(ctx, id); ok && !reachable(g, from, node) {
		return "", usageErr("run %s: node %s cannot be visited again from where the run is (%s): no edge leads back to it, so no visit would read the note", id, node, strings.Join(append(slices.Clone(from.visiting), from.next...), ", "))
	}
	if len(gd.Text) > runapi.MaxGuideText {
		return "", usageErr("the note is %d bytes; a note may hold %d", len(gd.Text), runapi.MaxGuideText)
	}
	c, done, err := a.as(by)
	if err != nil {
		return "", failedErr(err)
	}
	defer done()
	if err := c.SignalWorkflow(ctx, id, "", runapi.SignalGuide, gd); err != nil {
		return "", failedErr(fmt.Errorf("signal run %s: %w", id, err))
	}
	return fmt.Sprintf("note sent to node %s of run %s: its next visit gets it after its prompt", node, id), nil
}

// runGraph is the graph run id executes: Temporal's record of it, else
// the run store's.
func (a *app) runGraph(ctx context.Context, id string) (*graph.Graph, error) {
	g, ok, err := a.temporalGraph(ctx, id)
	if err != nil {
		return nil, failedErr(err)
	}
	if ok {
		return g, nil
	}
	cp, err := a.latestCheckpoint(ctx, id)
	if errors.Is(err, runstore.ErrNoCheckpoint) {
		return nil, failedErr(fmt.Errorf("run %s: Temporal does not know it and the run store has no checkpoint of it", id))
	}
	if err != nil {
		return nil, failedErr(err)
	}
	g, err = runapi.GraphOf(cp)
	if err != nil {
		return nil, failedErr(err)
	}
	return g, nil
}

// as is the Temporal client acting as identity by (the client itself when
// by is empty): Temporal's history records who answered or steered.
func (a *app) as(by string) (client.Client, func(), error) {
	c, err := a.temporal()
	if err != nil || by == "" {
		return c, func() {}, err
	}
	opts := client.Options{Namespace: a.cfg.Namespace, Identity: by, Logger: quietLogger{}}
	if a.tel != nil {
		opts.Interceptors = a.tel.ClientInterceptors()
	}
	sub, err := client.NewClientFromExisting(c, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("act as %s on Temporal: %w", by, err)
	}
	return sub, sub.Close, nil
}

// osUser names the person at this terminal: user@host.
func osUser() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		name += "@" + h
	}
	return name
}

// runPlace is where a run is: the nodes being visited now, and the
// nodes it visits next without going anywhere first.
type runPlace struct {
	visiting, next []string
}

// whereRunIs asks the live run where it is (else its latest checkpoint);
// ok is false when neither can say.
func (a *app) whereRunIs(ctx context.Context, id string) (runPlace, bool) {
	var p runPlace
	if st, err := a.queryState(ctx, id); err == nil {
		p.visiting = st.Current
		if st.Workspace != nil {
			for _, b := range st.Workspace.Branches {
				if b.Next != "" {
					p.next = append(p.next, b.Next)
				}
			}
		}
	}
	cp, err := a.latestCheckpoint(ctx, id)
	if err == nil {
		for _, c := range cp.Cursor {
			if !slices.Contains(p.visiting, c.Node) {
				p.next = append(p.next, c.Node)
			}
		}
	}
	return p, len(p.visiting)+len(p.next) > 0
}

// reachable says node is visited again from p: it is next, or an edge
// path leads to it from a node being visited or next.
func reachable(g *graph.Graph, p runPlace, node string) bool {
	if slices.Contains(p.next, node) {
		return true
	}
	seen := map[string]bool{}
	queue := append(slices.Clone(p.visiting), p.next...)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range g.EdgesFrom(n) {
			if e.To == node {
				return true
			}
			if !seen[e.To] {
				seen[e.To] = true
				queue = append(queue, e.To)
			}
		}
	}
	return false
}
