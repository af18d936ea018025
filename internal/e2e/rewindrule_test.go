package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

// Items 2 and 3: the one rule for rewind. A rewind to 3 writes checkpoint
// 10 and deletes what only 4-9 named; those are listed as dropped by it,
// and rewind --to, fork --at and workspace --at refuse them with that
// reason, while 3 and 10 stay whole. A rewind of a completed run to the
// checkpoint it ended at is refused: nothing would run.
func TestRewindDropsLaterCheckpointsAndEveryCommandKnows(t *testing.T) {
	h, dir := fileHarness(t)
	file := graphFile(t, "four-drafts")
	h.tether(t, dir, "run", file, "--id", "a1", "--follow")
	infos, err := h.runs.List(context.Background(), "a1")
	require.NoError(t, err)
	require.Len(t, infos, 9)

	out := h.tether(t, dir, "rewind", "a1", "--to", "3")
	assert.Regexp(t, `rewound to checkpoint 3 \(new checkpoint 10, [1-9]\d* blobs? dropped\)`, out)
	_, err = h.result(h.c.GetWorkflow(context.Background(), "a1", ""))
	require.NoError(t, err)

	out = h.tether(t, dir, "checkpoints", "a1")
	for seq := 4; seq <= 9; seq++ {
		assert.Regexp(t, fmt.Sprintf(`(?m)^%d +dropped +dropped by the rewind to 3 \(checkpoint 10\)$`, seq), out)
	}
	assert.Regexp(t, `(?m)^3 +running +check`, out)
	assert.Regexp(t, `(?m)^10 +running +check`, out)

	reason := "the rewind to checkpoint 3, which wrote checkpoint 10, dropped checkpoints 4 to 9"
	for _, args := range [][]string{
		{"fork", "a1", "--at", "7", "--id", "f7"},
		{"rewind", "a1", "--to", "8"},
		{"workspace", "a1", "--at", "7", "export", filepath.Join(t.TempDir(), "x")},
	} {
		code, out := tetherCode(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, out)
		assert.Contains(t, out, reason, "%v", args)
	}
	assert.Equal(t, 0, h.executions("f7"), "the refused fork started nothing")

	// The whole ones work: the rewind's own checkpoint and its target.
	export := filepath.Join(t.TempDir(), "at10")
	h.tether(t, dir, "workspace", "a1", "--at", "10", "export", export)
	got, err := os.ReadFile(filepath.Join(export, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "draft 2", string(got))
	out = h.tether(t, dir, "fork", "a1", "--at", "3", "--id", "f3", "--follow")
	assert.Contains(t, out, "run f3 completed")

	// The rewound run completed again; rewinding it to its end is refused.
	infos, err = h.runs.List(context.Background(), "a1")
	require.NoError(t, err)
	last := infos[len(infos)-1].Seq
	code, out := tetherCode(t, "rewind", "a1", "--to", fmt.Sprint(last))
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Regexp(t, regexp.QuoteMeta(fmt.Sprintf("the run ended at checkpoint %d (completed) with nothing left to visit", last)), out)
	st := h.tether(t, dir, "status", "a1")
	assert.Contains(t, st, "status:     completed", "still completed, not failed")
}
