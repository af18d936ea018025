package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/runapi"
)

// TestReplayHistories replays every committed history of a real run. A
// change to GraphRun that would make an old run behave differently fails
// here; such a change needs workflow.GetVersion and a new history (make
// histories), never an edited old one.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no histories in testdata/histories; record them with `make histories`")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
			r.RegisterWorkflowWithOptions(Notice, workflow.RegisterOptions{Name: runapi.NoticeWorkflowType})
			r.RegisterWorkflowWithOptions(GitHubDelivery, workflow.RegisterOptions{Name: github.WorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
