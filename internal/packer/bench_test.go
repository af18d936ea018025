package packer

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/testenv/files"
)

const benchSessionBytes = 100 << 20

var benchWords = strings.Fields(`the a to of and in is that for it with as on this be are
	function return error nil if else err string int struct func package import type var const
	file test build run go make check value result output input session node graph workflow
	activity worker temporal agent claude codex pi model prompt answer question tool call user
	assistant message content text json yaml config path directory archive pack unpack header
	should would could will can need must please fix update add remove change refactor review`)

// writeJSONL writes n bytes of transcript-like JSON lines: fixed keys,
// uuids, timestamps, prose from a small vocabulary and some base64-ish tool
// output, which compresses about as well as real Claude Code transcripts.
func writeJSONL(tb testing.TB, path string, n int, rng *rand.Rand) {
	tb.Helper()
	require.NoError(tb, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	require.NoError(tb, err)
	w := bufio.NewWriterSize(f, 1<<20)
	uuid := func() string {
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, rng.Uint32()&0xffff|0x8000, rng.Uint64()&0xffffffffffff)
	}
	var line bytes.Buffer
	written, turn := 0, 0
	for written < n {
		line.Reset()
		turn++
		role := "user"
		if turn%2 == 0 {
			role = "assistant"
		}
		fmt.Fprintf(&line, `{"parentUuid":"%s","isSidechain":false,"type":"%s","message":{"role":"%s","content":[{"type":"text","text":"`, uuid(), role, role)
		for i, words := 0, 20+rng.IntN(200); i < words; i++ {
			line.WriteString(benchWords[rng.IntN(len(benchWords))])
			line.WriteByte(' ')
		}
		if turn%5 == 0 {
			line.WriteString(`"},{"type":"tool_result","content":"`)
			for i, k := 0, rng.IntN(600); i < k; i++ {
				line.WriteByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[rng.IntN(64)])
			}
		}
		fmt.Fprintf(&line, `"}]},"uuid":"%s","timestamp":"2026-11-30T12:%02d:%02d.%03dZ","cwd":"/home/dev/src/github.com/tether-run/tether","sessionId":"%s","version":"2.1.332","gitBranch":"main"}`+"\n",
			uuid(), rng.IntN(60), rng.IntN(60), rng.IntN(1000), testID)
		k, err := w.Write(line.Bytes())
		require.NoError(tb, err)
		written += k
	}
	require.NoError(tb, w.Flush())
	require.NoError(tb, f.Close())
}

// benchSession writes a ~100 MB Claude Code session: an 80 MB transcript
// and ten 2 MB subagent transcripts. It returns the env and the byte count.
func benchSession(b *testing.B) (agent.Env, int64) {
	b.Helper()
	env := testEnv(b, "bench")
	proj := filepath.Join(env.StateRoot, "projects", slugOf(b, env))
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	writeJSONL(b, filepath.Join(proj, testID+".jsonl"), benchSessionBytes*8/10, rng)
	for i := range 10 {
		writeJSONL(b, filepath.Join(proj, testID, "subagents", fmt.Sprintf("agent-%d.jsonl", i)), benchSessionBytes/50, rng)
	}
	var total int64
	for _, f := range files.List(b, env.StateRoot) {
		fi, err := os.Stat(filepath.Join(env.StateRoot, f))
		require.NoError(b, err)
		total += fi.Size()
	}
	return env, total
}

func needZstd(b *testing.B) {
	if _, err := exec.LookPath("zstd"); err != nil {
		b.Skip("baseline skipped: the zstd command is not installed (apt-get install zstd)")
	}
}

// BenchmarkPack packs a 100 MB session, against `tar | zstd -1` on the same
// files. ratio is uncompressed bytes over archive bytes.
func BenchmarkPack(b *testing.B) {
	env, size := benchSession(b)
	for _, lv := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		b.Run("packer/"+lv.String(), func(b *testing.B) {
			defer func(old zstd.EncoderLevel) { encoderLevel = old }(encoderLevel)
			encoderLevel = lv
			p := newTestPacker(env, Limits{})
			b.SetBytes(size)
			var blob []byte
			for b.Loop() {
				var err error
				blob, err = p.PackSession(ctx, testID)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(size)/float64(len(blob)), "ratio")
		})
	}
	b.Run("packer/fastest/no-secret-scan", func(b *testing.B) {
		defer func() { scanFiles = true }()
		scanFiles = false
		p := newTestPacker(env, Limits{})
		b.SetBytes(size)
		for b.Loop() {
			_, err := p.PackSession(ctx, testID)
			require.NoError(b, err)
		}
	})
	b.Run("tar|zstd-1", func(b *testing.B) {
		needZstd(b)
		b.SetBytes(size)
		var out []byte
		for b.Loop() {
			var err error
			out, err = exec.Command("sh", "-c", `tar -C "$1" -cf - projects | zstd -1 -q -c`, "sh", env.StateRoot).Output()
			require.NoError(b, err)
		}
		b.ReportMetric(float64(size)/float64(len(out)), "ratio")
	})
}

// BenchmarkUnpack unpacks the same session into a fresh root per run,
// against `zstd -d | tar -x`. The packer fsyncs every file and directory;
// the baseline does not.
func BenchmarkUnpack(b *testing.B) {
	env, size := benchSession(b)
	blob, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
	require.NoError(b, err)
	b.Run("packer", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			dst := testEnv(b, "restore")
			require.NoError(b, newTestPacker(dst, Limits{}).UnpackSession(ctx, testID, blob))
		}
	})
	b.Run("zstd-d|tar", func(b *testing.B) {
		needZstd(b)
		src := filepath.Join(b.TempDir(), "session.tar.zst")
		tarball, err := exec.Command("sh", "-c", `tar -C "$1" -cf - projects | zstd -1 -q -c`, "sh", env.StateRoot).Output()
		require.NoError(b, err)
		require.NoError(b, os.WriteFile(src, tarball, 0o600))
		b.SetBytes(size)
		for b.Loop() {
			dst := b.TempDir()
			out, err := exec.Command("sh", "-c", `zstd -d -q -c "$1" | tar -C "$2" -xf -`, "sh", src, dst).CombinedOutput()
			require.NoError(b, err, string(out))
		}
	})
}

// BenchmarkPackManySmallFiles packs a session of 2,000 small subagent
// transcripts (2 KiB each): the per-file cost of the pack, which one big
// transcript hides.
func BenchmarkPackManySmallFiles(b *testing.B) {
	env := testEnv(b, "bench")
	proj := filepath.Join(env.StateRoot, "projects", slugOf(b, env))
	rng := rand.New(rand.NewChaCha8([32]byte{2}))
	writeJSONL(b, filepath.Join(proj, testID+".jsonl"), 2<<10, rng)
	for i := range 2000 {
		writeJSONL(b, filepath.Join(proj, testID, "subagents", fmt.Sprintf("agent-%04d.jsonl", i)), 2<<10, rng)
	}
	p := newTestPacker(env, Limits{})
	b.ReportAllocs()
	for b.Loop() {
		_, err := p.PackSession(ctx, testID)
		require.NoError(b, err)
	}
}
