package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// attemptsView is a fan-out's join: its branches side by side, what each
// changed and said, and which one the join kept and why.
type attemptsView struct {
	Run   string
	Join  string
	Visit int
	Mode  string
	Kept  string
	// Pick and By are a pick join's expressions; Explained says the join
	// recorded each branch's values of them.
	Pick      string
	By        string
	Explained bool
	Branches  []attempt
	Conflicts []string
	// A and B are the branches compared; Diff their difference.
	A, B    string
	Diff    *workspace.Change
	DiffErr string
	RunURL  string
	Err     string
}

type attempt struct {
	Name  string
	Kept  bool
	Nodes []string
	// Last is the branch's last node; Text what it said (TextIs says
	// what that is: "reply", "stdout", "output").
	Last    string
	Text    string
	TextIs  string
	Files   []fileStat
	Added   int
	Removed int
	Lines   int
	Tools   []toolResult
	// PickValue, ByValue and Why are what the join's expressions gave
	// (nil: not evaluated).
	PickValue any
	ByValue   any
	Why       string
	Head      string
	FilesErr  string
}

// toolResult is a tool node's visit in a branch: its command's exit.
type toolResult struct {
	Node     string
	Command  string
	ExitCode any
	TimedOut bool
	Tail     string
	URL      string
}

func (s *Server) attemptsPage(w http.ResponseWriter, r *http.Request) error {
	run, join, visit, err := visitAddress(r, "join")
	if err != nil {
		return err
	}
	ctx := r.Context()
	cp, err := s.visitCheckpoint(ctx, run, join, visit)
	if err != nil {
		return storeFailed("Attempts", err)
	}
	if cp == nil {
		return notFound("Attempts", fmt.Errorf("run %s has not reached visit %d of join %s (yet)", run, visit, join))
	}
	v := &attemptsView{Run: run, Join: join, Visit: visit, RunURL: runLink(run)}
	var heads = map[string]*runstore.WorkspaceState{}
	var states []*runstore.WorkspaceState
	var branches []runstore.BranchState
	for _, b := range cp.Joined {
		if b.Join == join && b.JoinVisit == visit {
			branches = append(branches, b)
			heads[b.Name] = b.Workspace
			states = append(states, b.Workspace)
		}
	}
	if len(branches) == 0 {
		return notFound("Attempts", fmt.Errorf("the checkpoint after join %s visit %d does not list its branches (the run keeps the branches of its latest %d joins)", join, visit, runstore.MaxJoined))
	}
	out := cp.Outputs[join]
	ws, _ := out[runapi.JoinOutputKey].(map[string]any)
	// A malformed entry reads as nothing; the page shows the rest, and
	// says which.
	jo, malformed := runapi.JoinOutputOf(ws)
	v.Mode, v.Kept, v.Pick, v.By, v.Explained = jo.Mode, jo.Kept, jo.Pick, jo.By, jo.Explained
	g := runapi.GraphOrEmpty(cp)
	if def, ok := g.Node(join); ok && def.Workspace != nil && !v.Explained {
		v.Pick, v.By = def.Workspace.Pick, def.Workspace.By
	}
	listed := map[string]runapi.JoinBranch{}
	for _, b := range jo.Branches {
		if b.Name != "" {
			listed[b.Name] = b
		}
	}
	for _, c := range jo.Conflicts {
		v.Conflicts = append(v.Conflicts, c.Path)
	}
	lastOut, _ := out[runapi.JoinBranchesKey].(map[string]any)
	err = s.withWorkspace(ctx, run, states, func(w *workspace.Workspace) error {
		for _, b := range branches {
			a := attempt{Name: b.Name, Kept: b.Kept, Nodes: b.Nodes, Last: b.Last}
			if b.Workspace != nil {
				a.Head = b.Workspace.Commit
			}
			if l, ok := listed[b.Name]; ok {
				if l.PickValue != nil {
					a.PickValue = *l.PickValue
				}
				if l.ByValue != nil {
					a.ByValue = *l.ByValue
				}
				a.Why, a.Kept = l.Why, l.Kept
			}
			if lo, ok := lastOut[b.Last].(map[string]any); ok {
				a.Text, a.TextIs = lastText(lo)
			}
			for _, n := range b.Nodes {
				def, ok := g.Node(n)
				if !ok || def.Kind != graph.KindTool {
					continue
				}
				tr := toolResult{Node: n, URL: visitURL(run, n, cp.Visits[n])}
				if len(def.Run) > 0 {
					tr.Command = shellLine(def.Run)
				}
				o, err := runapi.ToolOutputOf(cp.Outputs[n])
				if err == nil {
					tr.ExitCode = o.ExitCode
				}
				tr.TimedOut, tr.Tail = o.TimedOut, tailLines(o.Stdout+o.Stderr, 6)
				a.Tools = append(a.Tools, tr)
			}
			if a.Head != "" && a.Head != b.Base {
				c, err := w.Changes(ctx, b.Base, a.Head, workspace.ChangeLimits{})
				if err != nil {
					a.FilesErr = err.Error()
				} else {
					a.Files, a.Added, a.Removed = statsOf(c)
					a.Lines = a.Added + a.Removed
				}
			}
			if a.TextIs == "stdout" && slices.ContainsFunc(a.Tools, func(t toolResult) bool { return t.Node == b.Last }) {
				a.Text = "" // its tool result above shows it
			}
			v.Branches = append(v.Branches, a)
		}
		return s.compare(ctx, w, v, heads, r.URL.Query())
	})
	if err == nil {
		err = malformed
	}
	if err != nil {
		v.Err = blobref.Hide(err.Error())
	}
	return s.render(w, r, http.StatusOK, "attempts", page{Title: fmt.Sprintf("Attempts at %s visit %d", join, visit), Nav: "runs", Data: v})
}

// compare fills the diff between the two branches the page asks for
// (?a=&b=), the kept one and the first other by default.
func (s *Server) compare(ctx context.Context, w *workspace.Workspace, v *attemptsView, heads map[string]*runstore.WorkspaceState, q url.Values) error {
	v.A, v.B = q.Get("a"), q.Get("b")
	if v.A == "" && v.B == "" && len(v.Branches) >= 2 {
		v.A, v.B = v.Branches[0].Name, v.Branches[1].Name
		for i, b := range v.Branches {
			if b.Kept {
				v.A = b.Name
				v.B = v.Branches[(i+1)%len(v.Branches)].Name
			}
		}
	}
	if v.A == "" || v.B == "" {
		return nil
	}
	a, b := heads[v.A], heads[v.B]
	if a == nil || b == nil {
		v.DiffErr = fmt.Sprintf("the join has no branch %q or %q", v.A, v.B)
		return nil
	}
	c, err := w.Changes(ctx, a.Commit, b.Commit, workspace.ChangeLimits{})
	if err != nil {
		v.DiffErr = err.Error()
		return nil
	}
	v.Diff = c
	return nil
}

// lastText is what a branch's last node said, as text: an agent's
// reply, a tool's stdout (its last lines), else each field of its output
// on a line of its own; never the output as JSON.
func lastText(out map[string]any) (text, is string) {
	if t, ok := out["text"].(string); ok && strings.TrimSpace(t) != "" {
		return t, "reply"
	}
	if tool, err := runapi.ToolOutputOf(out); !errors.Is(err, runapi.ErrNotToolOutput) {
		return tailLines(tool.Stdout, 20), "stdout"
	}
	var b strings.Builder
	for _, k := range sortedNodes(out) {
		if strings.HasPrefix(k, "_") {
			continue
		}
		v, ok := out[k].(string)
		if !ok {
			raw, _ := json.Marshal(out[k])
			v = string(raw)
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	return strings.TrimRight(b.String(), "\n"), "output"
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
