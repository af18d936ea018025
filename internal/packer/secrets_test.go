package packer

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/testenv/files"
	"github.com/tether-run/tether/internal/treepolicy"
	"github.com/tether-run/tether/internal/treepolicy/treepolicytest"
)

// capture collects every log record as text.
func capture() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// RedactDetect (the default) packs, and warns with the file, the line and
// the kind of key, never the value; RedactRefuse fails the pack with
// ErrSecret, naming file and line, again without the value.
func TestPackSecretsDetectAndRefuse(t *testing.T) {
	env := testEnv(t, "x")
	slug := seedSession(t, env, testID)
	files.Write(t, env.StateRoot, "projects/"+slug+"/"+testID+".jsonl",
		"{\"type\":\"user\"}\n{\"type\":\"tool_result\",\"content\":\"export ANTHROPIC_API_KEY="+treepolicytest.AnthropicKey+"\"}\n")
	files.Write(t, env.StateRoot, "tasks/"+testID+"/1.json", "{}\n{}\n{}\n{\"env\":\"GITHUB_TOKEN="+treepolicytest.GHPToken+"\"}\n")
	values := []string{treepolicytest.AnthropicKey, treepolicytest.GHPToken, treepolicytest.AnthropicKey[:20], treepolicytest.GHPToken[:12]}

	t.Run("detect is the default", func(t *testing.T) {
		log, buf := capture()
		blob, err := newTestPacker(env, Limits{}, withLogger(log)).PackSession(ctx, testID)
		require.NoError(t, err)
		require.NotEmpty(t, blob)
		out := buf.String()
		assert.Contains(t, out, "file=project/"+testID+".jsonl line=2 kind=\""+treepolicy.KindAnthropic+"\"")
		assert.Contains(t, out, "file=tasks/"+testID+"/1.json line=4 kind=\""+treepolicy.KindGitHub+"\"")
		for _, v := range values {
			assert.NotContains(t, out, v)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		log, buf := capture()
		blob, err := newTestPacker(env, Limits{}, WithRedact(RedactRefuse), withLogger(log)).PackSession(ctx, testID)
		require.ErrorIs(t, err, ErrSecret)
		assert.Nil(t, blob)
		assert.Contains(t, err.Error(), "project/"+testID+".jsonl line 2")
		assert.Contains(t, err.Error(), treepolicy.KindAnthropic)
		for _, v := range values {
			assert.NotContains(t, err.Error(), v)
			assert.NotContains(t, buf.String(), v)
		}
	})
	t.Run("the packer does not read the environment", func(t *testing.T) {
		// The worker's configuration reads TETHER_REDACT and passes the
		// mode down (WithRedact); a packer without the option detects.
		t.Setenv(RedactEnv, "refuse")
		_, err := newTestPacker(env, Limits{}, withLogger(slog.New(slog.DiscardHandler))).PackSession(ctx, testID)
		require.NoError(t, err)
	})
	t.Run("clean session", func(t *testing.T) {
		clean := testEnv(t, "y")
		seedSession(t, clean, testID)
		log, buf := capture()
		_, err := newTestPacker(clean, Limits{}, WithRedact(RedactRefuse), withLogger(log)).PackSession(ctx, testID)
		require.NoError(t, err)
		assert.Empty(t, buf.String())
	})
}

func TestParseRedactMode(t *testing.T) {
	for in, want := range map[string]RedactMode{"": RedactDetect, "detect": RedactDetect, " Refuse ": RedactRefuse} {
		got, err := ParseRedactMode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseRedactMode("maybe")
	require.ErrorIs(t, err, ErrRedactMode)
	assert.Contains(t, err.Error(), "TETHER_REDACT=\"maybe\"; use detect or refuse")
}

// Many copies of a key make a bounded number of log lines.
func TestPackSecretsDetectLogIsBounded(t *testing.T) {
	env := testEnv(t, "x")
	slug := seedSession(t, env, testID)
	files.Write(t, env.StateRoot, "projects/"+slug+"/"+testID+".jsonl", strings.Repeat(treepolicytest.AWSID+"\n", 1000))
	log, buf := capture()
	_, err := newTestPacker(env, Limits{}, WithRedact(RedactDetect), withLogger(log)).PackSession(ctx, testID)
	require.NoError(t, err)
	lines := strings.Count(buf.String(), "\n")
	assert.LessOrEqual(t, lines, maxSecretWarnings+1)
	assert.Contains(t, buf.String(), "more=990")
	assert.NotContains(t, buf.String(), treepolicytest.AWSID)
}

// BenchmarkScanSecrets measures the scan alone over transcript-like JSONL
// with no secrets (the common case); it runs on every file of every pack.
func BenchmarkScanSecrets(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	writeJSONL(b, path, 64<<20, rand.New(rand.NewChaCha8([32]byte{2})))
	data, err := os.ReadFile(path)
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s := treepolicy.NewScanner(0)
		for off := 0; off < len(data); off += 32 << 10 {
			s.Write(data[off:min(off+32<<10, len(data))])
		}
		if f := s.Finish(); len(f) != 0 {
			b.Fatalf("found %v in clean data", f)
		}
	}
}
