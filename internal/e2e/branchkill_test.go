package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// TestWorkerKilledWhileThreeBranchesRun kills the worker process (SIGKILL)
// while the three branches of a fan-out are each inside Claude Code,
// resuming the conversation that asked the user a question, after the
// answer made each write a second file. A new worker with empty disks
// takes the three visits over: each restores its branch's files and its
// paused conversation from the store, and the join merges all six files.
func TestWorkerKilledWhileThreeBranchesRun(t *testing.T) {
	k := newKillRig(t, branchKillModel)
	bin, srv, c, fake, store, env := k.bin, k.srv, k.c, k.fake, k.store, k.env
	a := startWorkerProcess(t, bin, env)

	var nodes, edges []string
	for _, b := range []string{"a", "b", "c"} {
		nodes = append(nodes,
			fmt.Sprintf(`  - {id: %[1]s_prep, kind: tool, run: [sh, -c, 'echo from %[1]s > %[1]s.txt']}`, b),
			fmt.Sprintf(`  - {id: %[1]s, kind: agent, backend: claude_code, permissions: edit, prompt: "branch %[1]s\nASK_USER: go on with %[1]s?"}`, b),
			fmt.Sprintf(`  - {id: %[1]s_check, kind: tool, run: [sh, -c, 'cat %[1]s.txt %[1]s2.txt']}`, b))
		edges = append(edges,
			fmt.Sprintf(`  - {from: plan, to: %s_prep}`, b),
			fmt.Sprintf(`  - {from: %[1]s_prep, to: %[1]s}`, b),
			fmt.Sprintf(`  - {from: %[1]s, to: %[1]s_check}`, b),
			fmt.Sprintf(`  - {from: %s_check, to: gather}`, b))
	}
	g := parseGraph(t, fmt.Sprintf(graphYAML(t, "branch-kill"), strings.Join(nodes, "\n"), strings.Join(edges, "\n")), "branch-kill.yaml")
	const id = "branch-kill"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 5 * time.Second, WorkerLostAfter: 10 * time.Second}})
	require.NoError(t, err)

	// The three branches ask; the checkpoint records each one's files.
	h := &harness{t: t, srv: srv, c: c}
	var asked []runapi.PendingQuestion
	deadline := time.Now().Add(3 * time.Minute)
	for len(asked) < 3 {
		require.True(t, time.Now().Before(deadline), "the three branches did not all ask: %v", asked)
		st, err := h.query(id, 30*time.Second)
		require.NoError(t, err)
		asked = st.Questions
		time.Sleep(200 * time.Millisecond)
	}
	blobs, err := blob.Open(context.Background(), "file://"+store)
	require.NoError(t, err)
	runs := runstore.New(blobs)
	cp, err := runs.Latest(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, cp.Branches, 3, "the checkpoint records the open branches")
	for _, b := range cp.Branches {
		require.NotNil(t, b.Workspace)
		assert.NotEqual(t, b.Base, b.Workspace.Commit, "branch %s's head holds its first file", b.Name)
		assert.Equal(t, strings.TrimSuffix(b.Name, "_prep"), b.Next.Node, "branch %s stands at its agent", b.Name)
	}

	// The answers make each conversation write a second file, then think
	// for a while: the worker is killed then, with three visits inside
	// the CLI.
	for _, q := range asked {
		b := strings.SplitN(q.ID, "-", 2)[0]
		h.answer(id, q.ID, fmt.Sprintf("go on\nWRITE_FILE: %[1]s2.txt\nanswered %[1]s\nEND_FILE\nSLEEP_AFTER_TOOL: 20s", b))
	}
	deadline = time.Now().Add(2 * time.Minute)
	for !allSlept(fake) {
		require.True(t, time.Now().Before(deadline), "the three answered visits never reached the model's pause")
		time.Sleep(100 * time.Millisecond)
	}
	require.GreaterOrEqual(t, len(clitest.Processes(branchKillModel)), 3, "three CLIs run at once")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = a.cmd.Process.Wait()
	startWorkerProcess(t, bin, env)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, "base\nfrom a\nanswered a\nfrom b\nanswered b\nfrom c\nanswered c\n", fmt.Sprint(res.Output["files"]),
		"every branch's files came back on the new worker and were merged")
	cp, err = runs.Latest(context.Background(), id)
	require.NoError(t, err)
	for _, b := range []string{"a", "b", "c"} {
		assert.Equal(t, "from "+b+"\nanswered "+b+"\n", cp.Outputs[b+"_check"]["stdout"])
		text, _ := cp.Outputs[b]["text"].(string)
		assert.Contains(t, text, "turn 2", "branch %s's answer continued its conversation: %s", b, text)
		assert.Contains(t, text, "branch "+b, "the conversation holds the branch's first prompt: %s", text)
	}
	assert.Len(t, cp.Joined, 3)
	assert.Nil(t, cp.Branches)
	// Each answered visit began twice, on the killed worker and on the new
	// one, each time as turn 2 of the conversation that asked.
	for _, b := range []string{"a", "b", "c"} {
		starts := 0
		for _, r := range fake.Requests() {
			if !r.AfterToolResult && len(r.Prompts) == 2 && strings.Contains(r.Prompts[0], "branch "+b) && strings.Contains(r.Prompts[1], b+"2.txt") {
				starts++
			}
		}
		assert.Equal(t, 2, starts, "branch %s's answered visit ran on both workers", b)
	}
}

// branchKillModel names the model of this test's CLI runs.
const branchKillModel = "claude-branch-kill-1"

// allSlept reports whether the model was asked, by each of the three
// branches' conversations, for the reply after its second file was
// written: the reply it delays.
func allSlept(f *fakemodel.Server) bool {
	var seen []string
	for _, r := range f.Requests() {
		if !r.AfterToolResult || len(r.Prompts) < 2 {
			continue
		}
		for _, b := range []string{"a", "b", "c"} {
			if strings.Contains(r.Prompts[0], "branch "+b) && strings.Contains(r.Prompts[len(r.Prompts)-1], b+"2.txt") && !slices.Contains(seen, b) {
				seen = append(seen, b)
			}
		}
	}
	return len(seen) == 3
}
