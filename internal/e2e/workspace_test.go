package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/testenv"
)

// wsLoop: a persist writer edits files, a tool oracle reads them, a person
// approves or sends the writer round again.
const wsLoop = `
name: ws-loop
start: writer
nodes:
  - id: writer
    kind: agent
    backend: scripted
    session: persist
    prompt: "write"
    script:
      - "WRITE: notes.txt = draft 1\nWRITE: src/a.go = package a\nturn {{.Turn}}: wrote draft 1"
      - "WRITE: notes.txt = draft 2, after {{len .History}} earlier turn(s)\nDELETE: src/a.go\nturn {{.Turn}}: wrote draft 2"
      - "WRITE: notes.txt = draft 3, after {{len .History}} earlier turn(s)\nturn {{.Turn}}: wrote draft 3"
  - {id: check, kind: tool, run: [sh, -c, 'cat notes.txt; echo; ls -R']}
  - {id: gate, kind: human, question: "Approve?"}
  - {id: done, kind: end}
edges:
  - {from: writer, to: check}
  - {from: check, to: gate}
  - {from: gate, to: done, when: 'output.answer == "approve"'}
  - {from: gate, to: writer}
`

// TestWorkspaceTravelsWithTheRun: every visit of a writer → tool → human
// loop runs on a new worker with empty roots; the tool always reads what
// the writer wrote, the writer continues its conversation, and the run's
// history holds one commit per visit that changed the files.
func TestWorkspaceTravelsWithTheRun(t *testing.T) {
	for _, store := range []string{"fs", "s3"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			url := "file://" + dir
			if store == "s3" {
				url = s3Store(t, "ws")
			}
			h := newHarness(t, url)
			fresh := h.freshWorkerPerVisit()
			g, err := graph.Parse([]byte(wsLoop), "ws.yaml")
			require.NoError(t, err)
			id := "ws-" + store
			run := h.start(id, g, nil)
			for round := 1; round <= 3; round++ {
				q := h.waitQuestion(id)
				st := h.state(id)
				check := fmt.Sprint(st.Outputs["check"]["stdout"])
				require.Contains(t, check, fmt.Sprintf("draft %d", round), "the tool read the writer's files on another worker")
				if round == 1 {
					require.Contains(t, check, "a.go")
				} else {
					require.NotContains(t, check, "a.go", "a deleted file stays deleted")
					require.Contains(t, check, fmt.Sprintf("after %d earlier turn(s)", round-1), "the writer continued its own conversation")
				}
				answer := "revise"
				if round == 3 {
					answer = "approve"
				}
				h.answer(id, q.ID, answer)
			}
			_, err = h.result(run)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, fresh.Visits(), 6, "each agent and tool visit had a worker of its own")

			// One commit per visit that changed the files, in plain git.
			t.Setenv("TEMPORAL_ADDRESS", h.srv.Address)
			t.Setenv("TETHER_BLOB_URL", url)
			if _, err := exec.LookPath("git"); err != nil {
				testenv.Unavailable(t, "git is not installed")
			}
			code, log := tetherCode(t, "workspace", id, "log")
			require.Equal(t, 0, code, log)
			subjects := regexp.MustCompile(`(?m)^    (writer visit \d)$`).FindAllStringSubmatch(log, -1)
			var got []string
			for _, s := range subjects {
				got = append(got, s[1])
			}
			assert.Equal(t, []string{"writer visit 3", "writer visit 2", "writer visit 1"}, got, log)
			code, diff := tetherCode(t, "workspace", id, "diff")
			require.Equal(t, 0, code, diff)
			assert.Contains(t, diff, "+draft 3, after 2 earlier turn(s)")

			out := filepath.Join(t.TempDir(), "out")
			code, msg := tetherCode(t, "workspace", id, "export", out)
			require.Equal(t, 0, code, msg)
			notes, err := os.ReadFile(filepath.Join(out, "notes.txt"))
			require.NoError(t, err)
			assert.Equal(t, "draft 3, after 2 earlier turn(s)", string(notes))
			status, err := exec.Command("git", "-C", out, "status", "--porcelain").CombinedOutput()
			require.NoError(t, err, "%s", status)
			assert.Empty(t, strings.TrimSpace(string(status)), "the export is a clean checkout of its history")
			gitLog, err := exec.Command("git", "-C", out, "log", "--format=%s").CombinedOutput()
			require.NoError(t, err, "%s", gitLog)
			assert.Equal(t, "writer visit 3\nwriter visit 2\nwriter visit 1\n", string(gitLog))
		})
	}
}

// TestRewindRestoresFilesAndConversation: `tether rewind` to the checkpoint
// after the writer's first visit brings back that visit's files and its
// conversation together, on a worker that never saw either.
func TestRewindRestoresFilesAndConversation(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.freshWorkerPerVisit()
	g, err := graph.Parse([]byte(wsLoop), "ws.yaml")
	require.NoError(t, err)
	id := "ws-rewind"
	run := h.start(id, g, nil)
	var afterFirst int64
	for round := 1; round <= 3; round++ {
		q := h.waitQuestion(id)
		if round == 1 {
			cps, err := h.runs.List(context.Background(), id)
			require.NoError(t, err)
			// The checkpoint that committed writer visit 1 is the one
			// whose cursor is the tool.
			for _, info := range cps {
				cp, err := h.runs.Get(context.Background(), id, info.Seq)
				require.NoError(t, err)
				if len(cp.Cursor) == 1 && cp.Cursor[0].Node == "check" {
					afterFirst = cp.Seq
				}
			}
		}
		answer := "revise"
		if round == 3 {
			answer = "approve"
		}
		h.answer(id, q.ID, answer)
	}
	_, err = h.result(run)
	require.NoError(t, err)
	require.NotZero(t, afterFirst)

	out := h.tether(t, dir, "rewind", id, "--to", fmt.Sprint(afterFirst))
	require.Contains(t, out, "rewound")
	// The tool runs again first: it must see draft 1 and src/a.go, which
	// the later visits had changed and deleted.
	q := h.waitQuestion(id)
	st := h.state(id)
	check := fmt.Sprint(st.Outputs["check"]["stdout"])
	require.Contains(t, check, "draft 1")
	require.Contains(t, check, "a.go")
	h.answer(id, q.ID, "revise")
	// The writer's next visit is its second turn: the conversation of
	// visit 1, not of the abandoned visits 2 and 3.
	q = h.waitQuestion(id)
	st = h.state(id)
	assert.Contains(t, fmt.Sprint(st.Outputs["writer"]["text"]), "turn 2: wrote draft 2")
	assert.Contains(t, fmt.Sprint(st.Outputs["check"]["stdout"]), "draft 2, after 1 earlier turn(s)")
	h.answer(id, q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)
}
