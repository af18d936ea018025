package packer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
)

// transcript writes a Claude-shaped session of one transcript of size
// bytes and returns its env and the transcript's path.
func transcript(b *testing.B, size int) (agent.Env, string) {
	env := testEnv(b, "bench")
	path := filepath.Join(env.StateRoot, "projects", slugOf(b, env), testID+".jsonl")
	writeJSONL(b, path, size, rand.New(rand.NewChaCha8([32]byte{3})))
	return env, path
}

// appendTurn appends about n bytes of transcript lines to path.
func appendTurn(b *testing.B, path string, n int, rng *rand.Rand) {
	turn := filepath.Join(b.TempDir(), "turn.jsonl")
	writeJSONL(b, turn, n, rng)
	data, err := os.ReadFile(turn)
	require.NoError(b, err)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(b, err)
	_, err = f.Write(data)
	require.NoError(b, err)
	require.NoError(b, f.Close())
}

// BenchmarkPackDelta is a persist visit that appends a 20 KB turn to a
// transcript of 5 or 50 MB: the delta's size against the compressed size
// of the 20 KB alone (goal ≤ 1.5× plus a few KB of header), and its time
// against the transcript's size (goal: independent of it). Whole archives
// of the same sessions are measured beside it.
func BenchmarkPackDelta(b *testing.B) {
	for _, mb := range []int{5, 50} {
		env, path := transcript(b, mb<<20)
		p := newTestPacker(env, Limits{})
		_, m, err := p.PackDelta(ctx, testID, nil)
		require.NoError(b, err)
		rng := rand.New(rand.NewChaCha8([32]byte{4}))
		turn := filepath.Join(b.TempDir(), "turn.jsonl")
		writeJSONL(b, turn, 20<<10, rng)
		raw, err := os.ReadFile(turn)
		require.NoError(b, err)
		alone := len(testEncoder().EncodeAll(raw, nil))

		b.Run(fmt.Sprintf("delta/%dMB", mb), func(b *testing.B) {
			var blob []byte
			for b.Loop() {
				b.StopTimer()
				appendTurn(b, path, 20<<10, rng)
				b.StartTimer()
				var err error
				blob, m, err = p.PackDelta(ctx, testID, m)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(len(blob)), "bytes")
			b.ReportMetric(float64(alone), "turn-zstd-bytes")
			b.ReportMetric(float64(len(blob))/float64(alone), "x-turn")
		})
		b.Run(fmt.Sprintf("whole/%dMB", mb), func(b *testing.B) {
			var blob []byte
			for b.Loop() {
				var err error
				blob, err = p.PackSession(ctx, testID)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(len(blob)), "bytes")
		})
	}
}

// BenchmarkRestoreParts restores a 50 MB session on a fresh root from a
// base and 100 deltas of 20 KB turns, against the same session as one
// archive (goal ≤ 1.5×).
func BenchmarkRestoreParts(b *testing.B) {
	env, path := transcript(b, 50<<20)
	p := newTestPacker(env, Limits{})
	base, m, err := p.PackDelta(ctx, testID, nil)
	require.NoError(b, err)
	parts := [][]byte{base}
	rng := rand.New(rand.NewChaCha8([32]byte{5}))
	for range 100 {
		appendTurn(b, path, 20<<10, rng)
		var d []byte
		d, m, err = p.PackDelta(ctx, testID, m)
		require.NoError(b, err)
		parts = append(parts, d)
	}
	whole, err := p.PackSession(ctx, testID)
	require.NoError(b, err)
	b.Run("base+100", func(b *testing.B) {
		for b.Loop() {
			dst := testEnv(b, "restore")
			_, err := newTestPacker(dst, Limits{}).UnpackParts(ctx, testID, parts...)
			require.NoError(b, err)
		}
	})
	b.Run("one-archive", func(b *testing.B) {
		for b.Loop() {
			dst := testEnv(b, "restore")
			_, err := newTestPacker(dst, Limits{}).UnpackParts(ctx, testID, whole)
			require.NoError(b, err)
		}
	})
	b.Run("one-archive/UnpackSession", func(b *testing.B) {
		for b.Loop() {
			dst := testEnv(b, "restore")
			require.NoError(b, newTestPacker(dst, Limits{}).UnpackSession(ctx, testID, whole))
		}
	})
}
