package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/workflows"
)

// tether status names what the latest snapshot left out, as the
// checkpoint's workspace state carries it.
func TestStatusNamesWhatTheWorkspaceLeftOut(t *testing.T) {
	var out bytes.Buffer
	a := &app{out: &out}
	cp := &runstore.Checkpoint{RunID: "r1", Status: runstore.StatusRunning, Workspace: &runstore.WorkspaceState{
		Commit: "0123456789abcdef0123456789abcdef01234567", Files: 3, Commits: 2,
		Notes: []string{".env: a credential-shaped file (.env), not snapshotted (a snapshot keeps a credential only when the run's source tracked it)"},
	}}
	a.printState(workflows.StateOf(cp), "run store, checkpoint 1", "")
	assert.Contains(t, out.String(), "workspace:  note: .env: a credential-shaped file (.env), not snapshotted")
}
