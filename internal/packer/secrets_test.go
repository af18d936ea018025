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
)

// Fake keys of the real shapes, built at run time so this file holds no
// string a secret scanner would flag.
func fakeKey(prefix string, n int, alphabet string) string {
	rng := rand.New(rand.NewPCG(uint64(len(prefix)), uint64(n)))
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	urlSafe = alnum + "-_"
	upperDg = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64     = alnum + "+/"
)

var (
	anthropicKey = fakeKey("sk-"+"ant-api03-", 93, urlSafe) + "AA"
	anthropicOAT = fakeKey("sk-"+"ant-oat01-", 93, urlSafe) + "AA"
	openAIProj   = fakeKey("sk-"+"proj-", 120, urlSafe)
	openAIKey    = fakeKey("sk-", 48, alnum)
	openAISvc    = fakeKey("sk-"+"svcacct-", 60, urlSafe)
	awsID        = fakeKey("AK"+"IA", 16, upperDg)
	awsSTSID     = fakeKey("AS"+"IA", 16, upperDg)
	awsSecret    = fakeKey("", 40, b64)
	ghpToken     = fakeKey("gh"+"p_", 36, alnum)
	ghoToken     = fakeKey("gh"+"o_", 36, alnum)
	ghsToken     = fakeKey("gh"+"s_", 36, alnum)
	ghPAT        = fakeKey("github"+"_pat_", 82, alnum+"_")
	slackToken   = fakeKey("xo"+"xb-", 50, alnum+"-")
	googleKey    = fakeKey("AI"+"za", 35, urlSafe)
	stripeKey    = fakeKey("sk"+"_live_", 30, alnum)
)

func TestScanSecretsFindsKeyShapes(t *testing.T) {
	cases := []struct {
		text, kind string
	}{
		{`{"content":"ANTHROPIC_API_KEY=` + anthropicKey + `"}`, treepolicy.KindAnthropic},
		{`Authorization: Bearer ` + anthropicOAT, treepolicy.KindAnthropic},
		{`"OPENAI_API_KEY": "` + openAIProj + `"`, treepolicy.KindOpenAIProject},
		{`export OPENAI_API_KEY=` + openAIKey, treepolicy.KindOpenAI},
		{`key ` + openAISvc + ` end`, treepolicy.KindOpenAI},
		{`aws_access_key_id = ` + awsID, treepolicy.KindAWSKeyID},
		{`"AccessKeyId": "` + awsSTSID + `"`, treepolicy.KindAWSKeyID},
		{`aws_secret_access_key = ` + awsSecret, treepolicy.KindAWSSecret},
		{`AWS_SECRET_ACCESS_KEY=` + awsSecret, treepolicy.KindAWSSecret},
		{`{\"SecretAccessKey\": \"` + awsSecret + `\"}`, treepolicy.KindAWSSecret},
		{`creds ` + awsID + ` / ` + awsSecret, treepolicy.KindAWSSecret},
		{`token=` + ghpToken, treepolicy.KindGitHub},
		{`"` + ghoToken + `"`, treepolicy.KindGitHub},
		{`GITHUB_TOKEN=` + ghsToken, treepolicy.KindGitHub},
		{`git clone https://` + ghPAT + `@github.com/x/y`, treepolicy.KindGitHub},
		{`SLACK_TOKEN=` + slackToken, treepolicy.KindSlack},
		{`key=` + googleKey, treepolicy.KindGoogle},
		{`STRIPE=` + stripeKey, treepolicy.KindStripe},
		{"-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", treepolicy.KindPrivateKey},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			// On line 3, and straddling every chunk boundary.
			for _, pad := range []int{0, 1, scanChunk - 40, scanChunk - 5, scanChunk + 3, 2*scanChunk - 100} {
				text := "line one\nline two\n" + strings.Repeat(" ", pad) + c.text + "\nline four\n"
				got := scanAll(t, text)
				require.NotEmpty(t, got, "pad %d", pad)
				kinds := map[string]bool{}
				for _, f := range got {
					assert.Equal(t, 3, f.Line, "pad %d", pad)
					kinds[f.Kind] = true
				}
				assert.True(t, kinds[c.kind], "pad %d: found %v, want %s", pad, got, c.kind)
			}
		})
	}
}

func TestScanSecretsIgnoresLookalikes(t *testing.T) {
	for _, text := range []string{
		`"task-` + strings.Repeat("a1B2", 12) + `"`, // sk- inside a word
		`sk-ant-short`,
		`sk-this-is-a-long-kebab-case-identifier-of-words`,
		`commit ` + strings.Repeat("0123456789abcdef", 2) + `01234567 and AKIA is a word`,
		`AKIAIOSFODNN7EXAMPLEX`, // 17 characters after AKIA
		`sha ` + strings.Repeat("a", 40) + " " + strings.Repeat("0f", 20),
		`ghp_short`,
		`the path /Users/x/.ssh/id_rsa and the word PRIVATE KEY`,
		`{"uuid":"0b6f2c1e-4d4b-4a59-9a3e-1f2e3d4c5b6a","parentUuid":"7c1d0e9f-2a3b-4c5d-8e9f-0a1b2c3d4e5f"}`,
	} {
		assert.Empty(t, scanAll(t, text), text)
	}
}

// scanChunk is the scanner's pass size (treepolicy), which the cases
// straddle.
const scanChunk = 256 << 10

func scanAll(t testing.TB, text string) []treepolicy.Finding {
	t.Helper()
	s := treepolicy.NewScanner(0)
	// Feed in odd-sized writes, as io.Copy would.
	b := []byte(text)
	for len(b) > 0 {
		n := min(len(b), 7919)
		_, err := s.Write(b[:n])
		require.NoError(t, err)
		b = b[n:]
	}
	return s.Finish()
}

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
		"{\"type\":\"user\"}\n{\"type\":\"tool_result\",\"content\":\"export ANTHROPIC_API_KEY="+anthropicKey+"\"}\n")
	files.Write(t, env.StateRoot, "tasks/"+testID+"/1.json", "{}\n{}\n{}\n{\"env\":\"GITHUB_TOKEN="+ghpToken+"\"}\n")
	values := []string{anthropicKey, ghpToken, anthropicKey[:20], ghpToken[:12]}

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
	files.Write(t, env.StateRoot, "projects/"+slug+"/"+testID+".jsonl", strings.Repeat(awsID+"\n", 1000))
	log, buf := capture()
	_, err := newTestPacker(env, Limits{}, WithRedact(RedactDetect), withLogger(log)).PackSession(ctx, testID)
	require.NoError(t, err)
	lines := strings.Count(buf.String(), "\n")
	assert.LessOrEqual(t, lines, maxSecretWarnings+1)
	assert.Contains(t, buf.String(), "more=990")
	assert.NotContains(t, buf.String(), awsID)
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
