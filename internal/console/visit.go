package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

type visitView struct {
	Run   string
	Node  string
	Visit int
	Def   *graph.Node
	// Command is a tool's command, as its node writes it.
	Command string
	// Step is the visit's line of the run's path (nil while it runs).
	Step     *runstore.Step
	Started  time.Time
	Duration time.Duration
	Running  bool
	Result   string
	// Checkpoint is the one saved right after the visit.
	Checkpoint int64
	Text       string
	Fields     []field
	Usage      agent.Usage
	Backend    string
	SessionID  string
	Guidance   []runstore.Guidance
	// RetryNote is what the visit was told because an earlier attempt of
	// it was interrupted (agent.RetryNoteKey).
	RetryNote string
	Change    *workspace.Change
	Commit    string
	Files     []fileStat
	Added     int
	Removed   int
	ChangeErr string
	PrevURL   string
	NextURL   string
	RunURL    string
	Conv      *conversationView
}

// field is one key of a visit's output other than its text.
type field struct {
	Key   string
	Value string
	Long  bool
}

// visitAddress reads the run, the node and the visit number of a page at
// /runs/RUN/<kind>s/NODE/N (kind "visit" or "join"); an address that is not
// one is a page not found.
func visitAddress(r *http.Request, kind string) (run, node string, visit int, err error) {
	run, node = r.PathValue("run"), r.PathValue("node")
	visit, err = strconv.Atoi(r.PathValue("visit"))
	if err != nil || visit < 1 || runstore.ValidateRunID(run) != nil || runstore.ValidateNodeID(node) != nil {
		return "", "", 0, notFound("No such "+kind, fmt.Errorf("%s is not a %s's address: /runs/RUN/%ss/NODE/N", r.URL.Path, kind, kind))
	}
	return run, node, visit, nil
}

func (s *Server) visitPage(w http.ResponseWriter, r *http.Request) error {
	run, node, visit, err := visitAddress(r, "visit")
	if err != nil {
		return err
	}
	ctx := r.Context()
	title := fmt.Sprintf("%s visit %d", node, visit)
	v := &visitView{Run: run, Node: node, Visit: visit, RunURL: runLink(run)}
	cp, err := s.visitCheckpoint(ctx, run, node, visit)
	if err != nil {
		return storeFailed("Visit "+title, err)
	}
	if cp == nil {
		// No checkpoint holds it yet: it may be the visit in flight.
		rs, err := s.opts.Actions.State(ctx, run)
		if err != nil || rs.State.Visits[node] < visit {
			return notFound("Visit "+title, fmt.Errorf("run %s has no visit %d of node %s (yet)", run, visit, node))
		}
		v.Running = true
		if visit > 1 {
			v.PrevURL = visitURL(run, node, visit-1)
		}
		pg := page{Title: title, Nav: "runs", Live: "/runs/" + url.PathEscape(run) + "/events", Data: v}
		return s.render(w, r, http.StatusOK, "visit", pg)
	}
	v.Checkpoint = cp.Seq
	v.Def, _ = runapi.GraphOrEmpty(cp).Node(node)
	if v.Def != nil && v.Def.Kind == graph.KindTool {
		v.Command = shellLine(v.Def.Run)
	}
	for i := len(cp.Path) - 1; i >= 0; i-- {
		if st := cp.Path[i]; st.Node == node && st.Visit == visit {
			v.Step = &st
			break
		}
	}
	if v.Step != nil {
		v.Result = resultOf(*v.Step)
		v.Guidance = v.Step.Guidance
		if t, err := time.Parse(time.RFC3339Nano, v.Step.StartedAt); err == nil {
			v.Started = t
		}
		v.Duration = time.Duration(v.Step.DurationMS) * time.Millisecond
	}
	if v.Step == nil || v.Step.Status != "failed" {
		v.output(cp.Outputs[node])
	}
	if v.Step != nil && !v.Step.Usage.IsZero() {
		v.Usage = v.Step.Usage // every round of the visit, asked questions included
	}
	if visit > 1 {
		v.PrevURL = visitURL(run, node, visit-1)
	}
	if cp.Visits[node] > visit {
		v.NextURL = visitURL(run, node, visit+1)
	} else if rep := s.opts.Actions.Health(ctx, ""); rep.Temporal == nil {
		if rs, err := s.opts.Actions.State(ctx, run); err == nil && rs.State.Visits[node] > visit {
			v.NextURL = visitURL(run, node, visit+1)
		}
	}
	states := []*runstore.WorkspaceState{cp.Workspace}
	for _, list := range [][]runstore.BranchState{cp.Branches, cp.Joined} {
		for _, b := range list {
			if slices.Contains(b.Nodes, node) {
				states = append(states, b.Workspace)
			}
		}
	}
	change, commit, err := s.visitChange(ctx, run, node, visit, states)
	if err != nil {
		v.ChangeErr = blobref.Hide(err.Error())
	}
	if change != nil {
		v.Change, v.Commit = change, commit
		v.Files, v.Added, v.Removed = statsOf(change)
	}
	if v.Def != nil && v.Def.Kind == graph.KindAgent {
		v.Conv = s.conversation(ctx, run, node, visit, cp, r.URL.Query())
	}
	return s.render(w, r, http.StatusOK, "visit", page{Title: title, Nav: "runs", Data: v})
}

// shellLine is a command's argv as a person would type it in a shell:
// each argument quoted when it holds anything but plain characters.
func shellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// output splits a visit's output into its text, its usage and session,
// and the other fields a person reads (never a state ref: the run never
// stores one on an output).
func (v *visitView) output(out map[string]any) {
	rest := map[string]any{}
	for k, val := range out {
		switch k {
		case "text":
			v.Text, _ = val.(string)
		case agent.UsageKey:
			if b, err := json.Marshal(val); err == nil {
				_ = json.Unmarshal(b, &v.Usage)
			}
		case agent.BackendKey:
			v.Backend, _ = val.(string)
		case agent.SessionIDKey:
			v.SessionID, _ = val.(string)
		case agent.RetryNoteKey:
			// Hidden again: a run recorded before the worker filtered
			// its notes may hold a key in one.
			note, _ := val.(string)
			v.RetryNote = blobref.Hide(note)
		default:
			rest[k] = val
		}
	}
	v.Fields = fieldsOf(rest)
}
