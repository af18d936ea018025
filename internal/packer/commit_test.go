package packer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/testenv/files"
)

// A refusal during commit leaves the live root as it was: when the last
// part of the session clashes with what the live root holds there (a file
// or a symlink where tasks/<id>/ goes), no earlier part has been swapped
// in. The live root holds an older copy of the same session, so a swapped
// part would show.
func TestCommitClashOnLastPartChangesNothing(t *testing.T) {
	src := testEnv(t, "x")
	seedSession(t, src, testID)
	withTasks, err := newTestPacker(src, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(src.StateRoot, "tasks", testID)))
	withoutTasks, err := newTestPacker(src, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)

	clashes := map[string]func(t *testing.T, env agent.Env, at string){
		"file": func(t *testing.T, env agent.Env, at string) {
			require.NoError(t, os.WriteFile(at, []byte("not a folder"), 0o600))
		},
		"symlink": func(t *testing.T, env agent.Env, at string) {
			outside := filepath.Join(filepath.Dir(env.StateRoot), "outside")
			require.NoError(t, os.MkdirAll(outside, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("precious"), 0o600))
			require.NoError(t, os.Symlink(outside, at))
		},
	}
	archives := map[string][]byte{
		"archive holds tasks":            withTasks,    // the clash is on a part being placed
		"archive holds no tasks (stale)": withoutTasks, // the clash is on a stale part being removed
	}
	for aname, blob := range archives {
		for cname, plant := range clashes {
			t.Run(aname+"/"+cname, func(t *testing.T) {
				dst := testEnv(t, "y")
				slug := slugOf(t, dst)
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+".jsonl", "old transcript\n")
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+"/subagents/old.jsonl", "old subagent\n")
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+"/subagents/agent-a1.jsonl", "old a1\n")
				require.NoError(t, os.MkdirAll(filepath.Join(dst.StateRoot, "tasks"), 0o700))
				plant(t, dst, filepath.Join(dst.StateRoot, "tasks", testID))
				before := snapshot(t, filepath.Dir(dst.StateRoot))

				err := newTestPacker(dst, Limits{}).UnpackSession(ctx, testID, blob)
				require.ErrorIs(t, err, ErrExists)
				assert.Equal(t, before, snapshot(t, filepath.Dir(dst.StateRoot)), "the refused unpack changed the live root")
			})
		}
	}
}
