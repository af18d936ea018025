package workflows

import (
	"encoding/base64"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/runapi"
)

// replayed is what one replay of a history did: the version each change
// id was given, and each activity scheduled, in order, with its input.
type replayed struct {
	interceptor.WorkerInterceptorBase
	versions   map[string][]workflow.Version
	activities []scheduled
	// local are the local activities run, in order.
	local []named
	// inputs are the activities' inputs, in order, and result is the
	// workflow's result, as the JSON Temporal's converter makes of them.
	inputs [][]byte
	result []byte
}

// named is a step by its type and its summary (what the Web UI shows).
type named struct {
	typ, summary string
}

// scheduled is one activity: its type, summary and input as JSON.
type scheduled struct {
	typ, summary string
	input        map[string]any
}

func (r *replayed) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &replayedInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: r}
}

type replayedInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *replayed
}

func (i *replayedInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&replayedOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, r: i.r})
}

//workflowcheck:ignore
func (i *replayedInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := i.Next.ExecuteWorkflow(ctx, in)
	if err == nil && res != nil {
		i.r.result, _ = json.Marshal(res)
	}
	return res, err
}

type replayedOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *replayed
}

func (o *replayedOutbound) GetVersion(ctx workflow.Context, id string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, id, minSupported, maxSupported)
	if !slices.Contains(o.r.versions[id], v) {
		o.r.versions[id] = append(o.r.versions[id], v)
	}
	return v
}

// ExecuteActivity records the activity's input as JSON. Deterministic,
// though workflowcheck cannot prove it: encoding/json reflects over the
// argument's own fields, in their declared order, and sorts map keys.
//
//workflowcheck:ignore
func (o *replayedOutbound) ExecuteActivity(ctx workflow.Context, typ string, args ...any) workflow.Future {
	s := scheduled{typ: typ, summary: workflow.GetActivityOptions(ctx).Summary}
	var b []byte
	if len(args) > 0 {
		var err error
		if b, err = json.Marshal(args[0]); err == nil {
			_ = json.Unmarshal(b, &s.input)
		}
	}
	o.r.activities = append(o.r.activities, s)
	o.r.inputs = append(o.r.inputs, b)
	return o.Next.ExecuteActivity(ctx, typ, args...)
}

func (o *replayedOutbound) ExecuteLocalActivity(ctx workflow.Context, typ string, args ...any) workflow.Future {
	o.r.local = append(o.r.local, named{typ, workflow.GetLocalActivityOptions(ctx).Summary})
	return o.Next.ExecuteLocalActivity(ctx, typ, args...)
}

func histories(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// replay replays one history against today's GraphRun and says what it did.
func replay(t *testing.T, file string) *replayed {
	t.Helper()
	r := &replayed{versions: map[string][]workflow.Version{}}
	rp, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: []interceptor.WorkerInterceptor{r}})
	require.NoError(t, err)
	rp.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	rp.RegisterWorkflowWithOptions(Notice, workflow.RegisterOptions{Name: runapi.NoticeWorkflowType})
	rp.RegisterWorkflowWithOptions(GitHubDelivery, workflow.RegisterOptions{Name: github.WorkflowType})
	require.NoError(t, rp.ReplayWorkflowHistoryFromJSONFile(nil, file), "replay %s", filepath.Base(file))
	return r
}

// payloads are a history event's payloads.
type payloads struct {
	Payloads []struct{ Data string } `json:"payloads"`
}

func (p payloads) first(t *testing.T, into any) {
	t.Helper()
	if data := p.raw(t); data != nil {
		require.NoError(t, json.Unmarshal(data, into))
	}
}

// raw is the bytes of the first payload, nil when there is none.
func (p payloads) raw(t *testing.T) []byte {
	t.Helper()
	if len(p.Payloads) == 0 {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(p.Payloads[0].Data)
	require.NoError(t, err)
	return data
}

// payload is one payload of a history event.
type payload struct{ Data string }

// text decodes a payload holding a string ("" when there is none).
func (p payload) text(t *testing.T) string {
	t.Helper()
	if p.Data == "" {
		return ""
	}
	data, err := base64.StdEncoding.DecodeString(p.Data)
	require.NoError(t, err)
	var s string
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

// history is a recorded history's events, as much of each as the tests
// read.
type history struct {
	Events []struct {
		EventType    string `json:"eventType"`
		UserMetadata struct {
			Summary payload `json:"summary"`
		} `json:"userMetadata"`
		Scheduled *struct {
			ActivityType struct{ Name string } `json:"activityType"`
			Input        payloads              `json:"input"`
		} `json:"activityTaskScheduledEventAttributes"`
		Marker *struct {
			MarkerName string              `json:"markerName"`
			Details    map[string]payloads `json:"details"`
		} `json:"markerRecordedEventAttributes"`
		Completed *struct {
			Result payloads `json:"result"`
		} `json:"workflowExecutionCompletedEventAttributes"`
	} `json:"events"`
}

// readHistory reads the history file.
func readHistory(t *testing.T, file string) history {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var h history
	require.NoError(t, json.Unmarshal(raw, &h))
	return h
}

// recorded are the activities a history scheduled, in order, and the
// local activities it ran.
func recorded(t *testing.T, file string) ([]scheduled, []named) {
	t.Helper()
	h := readHistory(t, file)
	var out []scheduled
	var local []named
	for _, e := range h.Events {
		switch {
		case e.EventType == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" && e.Scheduled != nil:
			s := scheduled{typ: e.Scheduled.ActivityType.Name, summary: e.UserMetadata.Summary.text(t)}
			e.Scheduled.Input.first(t, &s.input)
			out = append(out, s)
		case e.EventType == "EVENT_TYPE_MARKER_RECORDED" && e.Marker != nil && e.Marker.MarkerName == "LocalActivity":
			var m struct{ ActivityType string }
			e.Marker.Details["data"].first(t, &m)
			local = append(local, named{m.ActivityType, e.UserMetadata.Summary.text(t)})
		}
	}
	return out, local
}

// conversation is which conversation an activity of a visit resumes:
// for a Visit, its plan's kind and session; for the two-activity visits
// of older runs, the session RestoreSession restores and ExecuteNode
// resumes. Other activities resume none.
func conversation(s scheduled) string {
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	switch s.typ {
	case "Visit", "VisitBranch":
		plan, _ := s.input["session"].(map[string]any)
		if plan == nil {
			return "fresh"
		}
		return str(plan, "kind") + " " + str(plan, "session_id") + " " + str(plan, "state_ref")
	case "RestoreSession":
		return str(s.input, "session_id") + " " + str(s.input, "state_ref")
	case "ExecuteNode":
		return str(s.input, "session_id")
	}
	return ""
}

// TestReplayResumesTheSameConversations replays every history and checks
// that each visit plans to resume the very conversation the recorded run
// planned (or none, as it did), under the name the run gave it. A replay
// compares commands, not their inputs: a change of which conversation a
// visit continues (ADR-089's resolution order) would replay silently
// without this.
func TestReplayResumesTheSameConversations(t *testing.T) {
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := replay(t, f)
			want, _ := recorded(t, f)
			got := r.activities
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].typ, got[i].typ, "activity %d", i)
				assert.Equal(t, conversation(want[i]), conversation(got[i]), "activity %d (%s)", i, want[i].typ)
				// The Web UI's name of the step, where the run had one; a
				// name may have gained a suffix since (a branch visit now
				// names its branch).
				if want[i].summary != "" {
					assert.True(t, strings.HasPrefix(got[i].summary, want[i].summary), "activity %d: %q, the run named it %q", i, got[i].summary, want[i].summary)
				}
			}
		})
	}
}

// TestReplayRunsTheSameLocalActivities: a replay saves checkpoints and
// deletes blobs exactly where the recorded run did, under the names the
// Web UI showed for them. A replay matches local activities by their
// results only, so a change that deletes blobs at another moment (before
// a checkpoint landed, or never) or saves once more or less replays
// silently without this. (Histories recorded before steps had names have
// none to compare.)
func TestReplayRunsTheSameLocalActivities(t *testing.T) {
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, want := recorded(t, f)
			got := replay(t, f).local
			require.Len(t, got, len(want))
			for i := range want {
				assert.Equal(t, want[i].typ, got[i].typ, "local activity %d", i)
				if want[i].summary != "" {
					assert.Equal(t, want[i].summary, got[i].summary, "local activity %d (%s)", i, want[i].typ)
				}
			}
		})
	}
}

// parseSources parses dir's Go files, its tests left out, and calls do
// with each file's path and syntax.
func parseSources(t *testing.T, fset *token.FileSet, dir string, do func(path string, file *ast.File)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		do(path, file)
	}
}

// literals calls do with each name spec declares with a basic literal
// (a string or a number), and the literal as written.
func literals(spec *ast.ValueSpec, do func(name, value string)) {
	for i, name := range spec.Names {
		if i < len(spec.Values) {
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok {
				do(name.Name, lit.Value)
			}
		}
	}
}

// isGetVersion says call is workflow.GetVersion.
func isGetVersion(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "GetVersion" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "workflow"
}

// changeIDs are the workflow's GetVersion change ids with their newest
// version, read from the package's source: every string constant named
// change… with its version… constant. It also checks that every
// GetVersion call names one of them (or the parameter through which
// stopIfOverBudget passes one), so no id escapes the list.
func changeIDs(t *testing.T) map[string]workflow.Version {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]string{}
	var calls []string
	parseSources(t, fset, ".", func(_ string, file *ast.File) {
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				literals(n, func(name, value string) { consts[name] = value })
			case *ast.CallExpr:
				if !isGetVersion(n) {
					return true
				}
				require.Len(t, n.Args, 4, "%s", fset.Position(n.Pos()))
				id, ok := n.Args[1].(*ast.Ident)
				require.True(t, ok, "%s: GetVersion's change id must be a change… constant", fset.Position(n.Pos()))
				calls = append(calls, id.Name)
			}
			return true
		})
	})
	ids := map[string]workflow.Version{}
	for name, lit := range consts {
		if !strings.HasPrefix(name, "change") || !strings.HasPrefix(lit, `"`) {
			continue
		}
		id, err := strconv.Unquote(lit)
		require.NoError(t, err)
		v, ok := consts["version"+strings.TrimPrefix(name, "change")]
		require.True(t, ok, "change %s has no version%s constant", name, strings.TrimPrefix(name, "change"))
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		ids[id] = workflow.Version(n)
	}
	for _, c := range calls {
		if c != "change" { // stopIfOverBudget's parameter
			_, ok := consts[c]
			require.True(t, ok && strings.HasPrefix(c, "change"), "GetVersion with %s, which is not a change… constant", c)
		}
	}
	require.NotEmpty(t, ids)
	return ids
}

// TestEveryChangeReplaysBothBranches: for every GetVersion change id of
// the workflow, some committed history replays its old branch (the id is
// asked and given workflow.DefaultVersion: a run recorded before the
// change, taking the path the change left in place for it) and some
// history replays its newest version. A new change without a history of
// each fails here: record the old one from a build before the change, in
// a temporary worktree, as docs/testing.md says.
func TestEveryChangeReplaysBothBranches(t *testing.T) {
	ids := changeIDs(t)
	seen := map[string]map[workflow.Version][]string{}
	for _, f := range histories(t) {
		for id, vs := range replay(t, f).versions {
			for _, v := range vs {
				if seen[id] == nil {
					seen[id] = map[workflow.Version][]string{}
				}
				seen[id][v] = append(seen[id][v], filepath.Base(f))
			}
		}
	}
	for _, id := range sortedKeys(ids) {
		assert.NotEmpty(t, seen[id][workflow.DefaultVersion], "no history replays the old branch of change %q", id)
		assert.NotEmpty(t, seen[id][ids[id]], "no history replays version %d of change %q", ids[id], id)
		t.Logf("%-26s old: %s; new: %s", id, strings.Join(seen[id][workflow.DefaultVersion], ", "), strings.Join(seen[id][ids[id]], ", "))
	}
	for id := range seen {
		_, ok := ids[id]
		assert.True(t, ok, "a history asks for change %q, which the workflow no longer has", id)
	}
}
