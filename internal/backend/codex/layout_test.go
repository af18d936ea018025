package codex

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
	"github.com/tether-run/tether/internal/testenv/files"
)

const testRollout = "sessions/2026/11/29/rollout-2026-11-29T23-59-58-" + packertest.ID + ".jsonl"

func seed(t testing.TB, env agent.Env, id string) []string {
	rollout := "sessions/2026/11/29/rollout-2026-11-29T23-59-58-" + id + ".jsonl"
	files.Write(t, env.StateRoot, rollout, `{"type":"session_meta","payload":{"cwd":"/x"}}`+"\n")
	files.Write(t, env.StateRoot, "sessions/2026/11/30/notes.txt", "noise\n")
	return []string{rollout}
}

// testPacker is the backend's packer as its layout tests build it.
var testPacker = clitest.Packer(Name, layout)

func TestLayout(t *testing.T) {
	id := packertest.ID
	clitest.RunLayout(t, Name, layout, packertest.Layout{
		Seed:    seed,
		Private: []string{"auth.json", "config.toml", "installation_id", "state_5.sqlite", "sessions/2026/11/29/auth.json"},
		Foreign: map[string]error{
			"sessions/2026/11/rollout-2026-11-30T01-02-03-" + id + ".jsonl":                    packer.ErrNotWhitelisted,
			"sessions/2026/11/30/rollout-2026-11-30T01-02-03-" + packertest.OtherID + ".jsonl": packer.ErrNotWhitelisted,
			"sessions/2026/11/30/rollout-x-" + id + ".jsonl":                                   packer.ErrNotWhitelisted,
			"archived_sessions/rollout-2026-11-30T01-02-03-" + id + ".jsonl":                   packer.ErrNotWhitelisted,
			"sessions/2026/11/30":           packer.ErrNotWhitelisted,
			"sessions/2026/11/29/notes.txt": packer.ErrNotWhitelisted,
		},
	})
}

// The rollout is found under any date and is the file executors resume
// from; a copy of the same session under another date is replaced by an
// unpack.
func TestRolloutUnderAnyDate(t *testing.T) {
	ctx := context.Background()
	a := agent.Env{StateRoot: filepath.Join(t.TempDir(), "a")}
	seed(t, a, packertest.ID)
	f, err := testPacker(a).SessionFile(ctx, packertest.ID)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(a.StateRoot, filepath.FromSlash(testRollout)), f)
	blob, err := testPacker(a).PackSession(ctx, packertest.ID)
	require.NoError(t, err)

	b := agent.Env{StateRoot: filepath.Join(t.TempDir(), "b")}
	stray := "sessions/2026/12/01/rollout-2026-12-01T00-00-00-" + packertest.ID + ".jsonl"
	files.Write(t, b.StateRoot, stray, "stray\n")
	require.NoError(t, testPacker(b).UnpackSession(ctx, packertest.ID, blob))
	assert.Equal(t, []string{testRollout}, files.List(t, b.StateRoot))
}
