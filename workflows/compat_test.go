package workflows

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workspace"
)

// A run that the code of 3b88009 checkpointed (testdata/checkpoints/
// compat-3b88009: a fan-out to two tool nodes, a pick join that kept
// swap's files, a human node it waits on; every checkpoint signed, while
// the checkpoint still embedded graph.Graph) is resumed by this code from
// its latest checkpoint: read and verified under the key, its graph and
// workspace restored, answered, and finished, every new checkpoint
// signed. internal/runstore.TestCheckpointsOf3b88009ReadAndWriteTheSameBytes
// shows the bytes themselves unchanged.
func (s *GraphRunSuite) TestResumesACheckpointOf3b88009() {
	const run, key = "compat-1", "compat-fixture-key-32-bytes-long"
	ctx := context.Background()
	dir := filepath.Join(s.T().TempDir(), "store")
	s.Require().NoError(os.MkdirAll(dir, 0o700))
	s.Require().NoError(exec.Command("cp", "-a", filepath.Join(testenv.Root(), "testdata", "checkpoints", "compat-3b88009")+"/.", dir).Run())
	fs, err := blob.OpenFS(dir)
	s.Require().NoError(err)
	s.store = &faultyStore{Store: fs}
	s.runs = runstore.New(s.store, runstore.WithKey([]byte(key)))
	work := s.T().TempDir()
	s.acts.Blobs, s.acts.Runs = s.store, s.runs
	s.acts.Workspaces = workspace.NewManager(work+"/state/workspaces", s.store, workspace.Limits{}, nil)

	cp, err := s.runs.Latest(ctx, run)
	s.Require().NoError(err, "the old checkpoint reads and verifies")
	s.Require().Equal(runstore.StatusWaiting, cp.Status)
	s.Require().Equal(int64(7), cp.Seq)

	env := s.newEnv()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Minute)
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: run, Checkpoint: cp})
	s.Require().True(env.IsWorkflowCompleted())
	s.Require().NoError(env.GetWorkflowError())
	var res runapi.GraphRunResult
	s.Require().NoError(env.GetWorkflowResult(&res))
	s.Equal("plan>add>swap>best>ask>done", pathOf(&res), "the resumed run went on from the question to the end its answer leads to")
	s.Equal("yes", res.Output["answer"])

	last, err := s.runs.Latest(ctx, run)
	s.Require().NoError(err, "the new checkpoints are signed under the same key")
	s.Greater(last.Seq, cp.Seq)
	s.Equal(runstore.StatusCompleted, last.Status)
	s.Equal("compat", runapi.GraphOrEmpty(last).Name)
	best, _ := runapi.GraphOrEmpty(last).Node("best")
	s.Equal("diff.lines", best.Workspace.By, "the graph went through the resume whole")
	s.Require().NotNil(last.Workspace)
	s.Equal(cp.Workspace.Commit, last.Workspace.Commit, "the human node changed no file: the kept branch's files are the run's")
}
