package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/testenv"
)

// turnsOf are the requests to the model whose latest prompt holds marker.
func turnsOf(f *fakemodel.Server, marker string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range f.Turns() {
		if n := len(r.Prompts); n > 0 && strings.Contains(r.Prompts[n-1], marker) {
			out = append(out, r)
		}
	}
	return out
}

func notesGraph(t *testing.T) *graph.Graph {
	t.Helper()
	return parseGraph(t, graphYAML(t, "notes-loop"), "notes.yaml")
}

// TestConsoleShowsAConversation: a Claude Code persist loop of three
// visits, each on a fresh worker; the page of visit 3 shows the three
// turns of its conversation, read from the session blobs, with the tool
// calls that wrote the files, and the file the visit wrote.
func TestConsoleShowsAConversation(t *testing.T) {
	h := newHarness(t, "")
	cliBackends(t, h)
	h.freshWorkerPerVisit()
	id := "console-conversation"
	h.start(id, notesGraph(t), nil)
	for visit := 1; visit <= 2; visit++ {
		q := h.waitQuestion(id)
		require.Equal(t, fmt.Sprintf("judge-%d", visit), q.ID)
		h.answer(id, q.ID, "revise")
	}
	require.Equal(t, "judge-3", h.waitQuestion(id).ID)

	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id+"/visits/writer/3"))
	waitText(t, ctx, "#conversation", "turn 3")
	conv := text(t, ctx, "#conversation")
	for turn := 1; turn <= 3; turn++ {
		assert.Contains(t, conv, fmt.Sprintf("user · turn %d", turn))
		assert.Contains(t, conv, fmt.Sprintf("Draft %d of the notes.", turn))
		assert.Contains(t, conv, fmt.Sprintf("notes/visit-%d.md", turn), "turn %d's tool call names its file", turn)
	}
	assert.Contains(t, conv, "tool call · Write")
	assert.Contains(t, conv, "tool result")
	assert.Contains(t, text(t, ctx, "#files"), "notes/visit-3.md")
	assert.Contains(t, text(t, ctx, "#files"), "notes of visit 3")
	assert.NotContains(t, text(t, ctx, "#files"), "notes/visit-2.md", "visit 3's change is its own")
	screenshot(t, ctx, "visit")
}

// TestConsoleSteersARunningLoop: while the writer's first visit runs, the
// run page shows its progress live; a note sent from the page goes to the
// writer's next visit, whose prompt to the model carries it, and whose
// page shows it. The run's history is recorded as guide.json.
func TestConsoleSteersARunningLoop(t *testing.T) {
	h := newHarness(t, "")
	fake := cliBackends(t, h)
	h.startWorker()
	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	id := "console-steer"
	started := h.start(id, notesGraph(t), nil)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	// The agent's write comes after the page loaded (its CLI takes
	// seconds to start): only the live stream can bring it.
	eval[bool](t, ctx, `window.tetherStayed = true`)
	heartbeat := time.Now()
	for p, ok := visitHeartbeat(t, h, id); !ok || p.Activity == ""; p, ok = visitHeartbeat(t, h, id) {
		heartbeat = time.Now()
		time.Sleep(100 * time.Millisecond)
	}
	waitText(t, ctx, "[data-progress]", "writer visit 1 · Write notes/visit-1.md")
	t.Logf("the page showed the heartbeat's progress %s after Temporal had it", time.Since(heartbeat).Round(100*time.Millisecond))
	require.True(t, eval[bool](t, ctx, `window.tetherStayed === true`), "the page was reloaded")
	screenshot(t, ctx, "run-live")

	const note = "Mention the otters in the second draft."
	require.Equal(t, "writer", run(t, ctx, chromedp.Value(css(`#guide select[name=node]`))), "the writer is the node picked")
	do(t, ctx,
		chromedp.SendKeys(css(`#guide textarea[name=text]`), note),
		chromedp.Click(css(`#guide button[type=submit]`)),
	)
	waitText(t, ctx, "#flash", "note sent to node writer of run "+id)
	// The page was drawn when the signal was sent; the run's state lists
	// the note once its workflow task took it, which the live stream
	// brings to the page.
	waitText(t, ctx, "#guide", note)

	q := h.waitQuestion(id)
	require.Equal(t, "judge-1", q.ID)
	first := turnsOf(fake, "Draft 1 of the notes.")
	require.NotEmpty(t, first)
	for _, r := range first {
		require.NotContains(t, strings.Join(r.Prompts, "\n"), note, "visit 1 was running when the note came: it is for the next visit")
	}
	do(t, ctx, chromedp.Reload())
	waitText(t, ctx, "#questions", "Approve draft 1?")
	do(t, ctx,
		chromedp.SendKeys(css(`#questions textarea[name=text]`), "revise"),
		chromedp.Click(css(`#questions button[type=submit]`)),
	)
	waitText(t, ctx, "#flash", "Your answer to judge-1 was accepted by run "+id)
	require.Equal(t, "judge-2", h.waitQuestion(id).ID)
	second := turnsOf(fake, "Draft 2 of the notes.")
	require.NotEmpty(t, second)
	last := second[len(second)-1].Prompts
	require.Contains(t, last[len(last)-1], "Draft 2 of the notes.")
	require.Contains(t, last[len(last)-1], activities.GuidanceIntro+"\n- "+note, "the model got the note after visit 2's prompt")

	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id+"/visits/writer/2"))
	waitText(t, ctx, "#guidance", note)
	assert.Contains(t, text(t, ctx, "#guidance"), "(tether console)")
	screenshot(t, ctx, "visit-guided")

	h.answer(id, "judge-2", "approve")
	_, err := h.result(started)
	require.NoError(t, err)
	h.recordHistory("guide", id)
}

// TestConsoleComparesAttempts: examples/best-of-three.yaml on the three
// CLIs; the join's page shows the three attempts side by side, the one the
// join kept and why (its pick and by, and each branch's values), each
// attempt's test run, and the diff between two of them. The run's history
// is recorded as join-pick-why.json.
func TestConsoleComparesAttempts(t *testing.T) {
	h, _, _, _ := exampleHarness(t, "fs", "attempts")
	file := filepath.Join(testenv.Root(), "examples", "best-of-three.yaml")
	repo := filepath.Join(testenv.Root(), "internal", "e2e", "testdata", "fixthetest")
	id := "console-attempts"
	code, out := tetherCode(t, "run", file, "--id", id, "--workspace", repo, "--heartbeat-timeout", "5s",
		"--input", "claude_approach="+minimalFix, "--input", "codex_approach="+largerFix, "--input", "pi_approach="+wrongFix)
	require.Equal(t, 0, code, out)
	q := h.waitQuestion(id)
	require.Equal(t, "approve-1", q.ID)

	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "#fanouts", "Attempts at best visit 1")
	do(t, ctx, chromedp.Click(css(`#fanouts a`)))
	waitText(t, ctx, "h1", "Attempts at best")
	why := text(t, ctx, "#why")
	assert.Contains(t, why, "Kept claude")
	assert.Contains(t, why, "last.exit_code == 0")
	assert.Contains(t, why, "diff.lines")
	for name, want := range map[string][]string{
		"claude": {"kept", "pick: true", "by: 4", "claude_tests: go test ./... exit 0", "stats/stats.go"},
		"codex":  {"pick: true", "codex_tests: go test ./... exit 0", "stats/stats.go"},
		"pi":     {"pick: false", "pi_tests: go test ./... exit 1", "FAIL"},
	} {
		card := text(t, ctx, `.attempt[data-branch="`+name+`"]`)
		for _, w := range want {
			assert.Contains(t, card, w, "the %s attempt", name)
		}
	}
	assert.NotContains(t, text(t, ctx, `.attempt[data-branch="codex"]`), "kept")
	screenshot(t, ctx, "attempts")

	do(t, ctx,
		chromedp.SetValue(css(`#compare select[name=a]`), "claude"),
		chromedp.SetValue(css(`#compare select[name=b]`), "pi"),
		chromedp.Click(css(`#compare button[type=submit]`)),
	)
	waitText(t, ctx, "#compare", "What pi has that claude has not")
	diff := text(t, ctx, "#compare")
	assert.Contains(t, diff, "stats/stats.go")
	assert.Contains(t, diff, "return sum / float64(len(xs)-1)")
	assert.Contains(t, diff, "for i := 1; i < len(xs); i++ {", "pi kept the loop claude fixed")

	h.answer(id, q.ID, "approve")
	_, err := h.result(h.c.GetWorkflow(t.Context(), id, ""))
	require.NoError(t, err)
	h.recordHistory("join-pick-why", id)
}
