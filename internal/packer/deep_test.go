package packer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/testenv/files"
)

// deepName is a whitelisted entry name under the session's task folder,
// depth folders deep.
func deepName(depth int) string {
	return "tasks/" + testID + "/" + strings.Repeat("a/", depth) + "f"
}

// deepArchive is the archive of the deep-path attack: one whitelisted file
// entry at the bottom of depth implicit folders, and the transcript.
func deepArchive(t testing.TB, depth int) []byte {
	return craft(t, testBackend, testID, file("project/"+testID+".jsonl", "{}\n"), file(deepName(depth), "x"))
}

// A path too deep or too long is refused before anything is created, and
// the folders an entry implies count against MaxFiles, so one tiny entry
// cannot make unpack create thousands of folders.
func TestUnpackRefusesDeepAndLongPaths(t *testing.T) {
	primary := file("project/"+testID+".jsonl", "{}\n")
	cc := testBackend
	cases := []struct {
		name   string
		limits Limits
		blob   func(t testing.TB) []byte
	}{
		{"1000 implicit folders", Limits{}, func(t testing.TB) []byte { return deepArchive(t, 1000) }},
		{"deeper than MaxDepth", Limits{MaxDepth: 4}, func(t testing.TB) []byte {
			// tasks/<id>/a/b/c/f is 5 directories deep on disk.
			return craft(t, cc, testID, primary, file("tasks/"+testID+"/a/b/c/f", "x"))
		}},
		{"explicit folders deeper than MaxDepth", Limits{MaxDepth: 3}, func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, dir("tasks/"+testID), dir("tasks/"+testID+"/a"), dir("tasks/"+testID+"/a/b"), dir("tasks/"+testID+"/a/b/c"))
		}},
		{"path longer than MaxPathBytes", Limits{}, func(t testing.TB) []byte {
			long := strings.Repeat(strings.Repeat("b", 250)+"/", 17) // 4,267 bytes at depth 19
			return craft(t, cc, testID, primary, file("tasks/"+testID+"/"+long+"f", "x"))
		}},
		{"implicit folders over MaxFiles", Limits{MaxFiles: 5}, func(t testing.TB) []byte {
			// 2 entries, but 6 folders on the way: tasks/<id>, a, b, c, d, e.
			return craft(t, cc, testID, primary, file("tasks/"+testID+"/a/b/c/d/e/f", "x"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t, "y")
			before := files.Tree(t, filepath.Dir(env.StateRoot))
			err := newTestPacker(env, c.limits).UnpackSession(ctx, testID, c.blob(t))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrTooLarge, "got %v", err)
			assert.Equal(t, before, stripRoot(files.Tree(t, filepath.Dir(env.StateRoot)), before), "the unpack left something behind")
		})
	}

	// Within the limits the same shapes unpack, implicit folders included.
	env := testEnv(t, "y")
	blob := craft(t, cc, testID, primary, file("tasks/"+testID+"/a/b/c/d/e/f", "x"))
	require.NoError(t, newTestPacker(env, Limits{MaxFiles: 8, MaxDepth: 8}).UnpackSession(ctx, testID, blob))
	assert.Equal(t, "x", files.Read(t, env.StateRoot, "tasks/"+testID+"/a/b/c/d/e/f"))
}

// Pack refuses a session that unpack would refuse.
func TestPackRefusesDeepPaths(t *testing.T) {
	env := testEnv(t, "x")
	seedSession(t, env, testID)
	files.Write(t, env.StateRoot, deepName(DefaultMaxDepth), "x")
	_, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
	assert.ErrorIs(t, err, ErrTooLarge, "got %v", err)
	assert.ErrorIs(t, err, ErrTooDeep, "got %v", err)

	_, err = newTestPacker(env, Limits{MaxDepth: 1000}).PackSession(ctx, testID)
	assert.NoError(t, err)
}

// countdownCtx is cancelled after its Err method has been consulted n
// times: it stands for a deadline that expires at any point of an unpack.
type countdownCtx struct {
	context.Context
	left  atomic.Int64
	calls atomic.Int64
}

func newCountdown(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background()}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) Err() error {
	c.calls.Add(1)
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// The context is honoured in every phase of an unpack (extraction, fsync,
// commit): cancelled at any of its checks, the unpack returns
// context.Canceled and leaves the live root exactly as it was, here over
// an older copy of the same session.
func TestUnpackHonoursContextEverywhere(t *testing.T) {
	src := testEnv(t, "x")
	seedSession(t, src, testID)
	for i := range 4 {
		files.Write(t, src.StateRoot, fmt.Sprintf("tasks/%s/d%d/e/%d.json", testID, i, i), "{}")
	}
	blob, err := newTestPacker(src, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)

	dst := testEnv(t, "y")
	slug := slugOf(t, dst)
	files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+".jsonl", "old transcript\n")
	files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+"/subagents/old.jsonl", "old\n")
	files.Write(t, dst.StateRoot, "tasks/"+testID+"/old.json", "old\n")
	before := snapshot(t, dst.StateRoot)

	full := newCountdown(1 << 40)
	require.NoError(t, newTestPacker(testEnv(t, "z"), Limits{}).UnpackSession(full, testID, blob))
	checks := full.calls.Load()
	require.Greater(t, checks, int64(30), "the context is consulted per entry and per folder")
	t.Logf("an unpack of this archive consults the context %d times", checks)

	for n := int64(0); n < checks; n++ {
		err := newTestPacker(dst, Limits{}).UnpackSession(newCountdown(n), testID, blob)
		if err == nil {
			// Past the last check that can still stop it.
			continue
		}
		require.ErrorIs(t, err, context.Canceled, "cancelled at check %d", n)
		require.Equal(t, before, snapshot(t, dst.StateRoot), "cancelled at check %d, the live root changed", n)
	}
}

// snapshot maps every path under root to what it is: a folder, a link and
// its target, or a file and its bytes.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "link -> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = "file: " + string(b)
		}
		return nil
	}))
	return out
}

// BenchmarkUnpackDeepPath measures how long unpack takes to refuse the
// deep-path archive (one file entry below depth implicit folders; 383
// bytes at depth 8,000).
func BenchmarkUnpackDeepPath(b *testing.B) {
	for _, depth := range []int{8000, 16000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			blob := deepArchive(b, depth)
			for b.Loop() {
				env := testEnv(b, "y")
				err := newTestPacker(env, Limits{}).UnpackSession(ctx, testID, blob)
				require.ErrorIs(b, err, ErrTooLarge)
			}
			b.ReportMetric(float64(len(blob)), "archive-bytes")
		})
	}
}
