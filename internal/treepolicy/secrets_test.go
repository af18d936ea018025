package treepolicy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	keys "github.com/tether-run/tether/internal/treepolicy/treepolicytest"
)

func TestScanSecretsFindsKeyShapes(t *testing.T) {
	cases := []struct {
		text, kind string
	}{
		{`{"content":"ANTHROPIC_API_KEY=` + keys.AnthropicKey + `"}`, KindAnthropic},
		{`Authorization: Bearer ` + keys.AnthropicOAT, KindAnthropic},
		{`"OPENAI_API_KEY": "` + keys.OpenAIProj + `"`, KindOpenAIProject},
		{`export OPENAI_API_KEY=` + keys.OpenAIKey, KindOpenAI},
		{`key ` + keys.OpenAISvc + ` end`, KindOpenAI},
		{`aws_access_key_id = ` + keys.AWSID, KindAWSKeyID},
		{`"AccessKeyId": "` + keys.AWSSTSID + `"`, KindAWSKeyID},
		{`aws_secret_access_key = ` + keys.AWSSecret, KindAWSSecret},
		{`AWS_SECRET_ACCESS_KEY=` + keys.AWSSecret, KindAWSSecret},
		{`{\"SecretAccessKey\": \"` + keys.AWSSecret + `\"}`, KindAWSSecret},
		{`creds ` + keys.AWSID + ` / ` + keys.AWSSecret, KindAWSSecret},
		{`token=` + keys.GHPToken, KindGitHub},
		{`"` + keys.GHOToken + `"`, KindGitHub},
		{`GITHUB_TOKEN=` + keys.GHSToken, KindGitHub},
		{`git clone https://` + keys.GHPAT + `@github.com/x/y`, KindGitHub},
		{`SLACK_TOKEN=` + keys.SlackToken, KindSlack},
		{`key=` + keys.GoogleKey, KindGoogle},
		{`STRIPE=` + keys.StripeKey, KindStripe},
		{"-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", KindPrivateKey},
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

func scanAll(t testing.TB, text string) []Finding {
	t.Helper()
	s := NewScanner(0)
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

// A key at the very start of a file, or one whose anchor ends the file, is
// found; an anchor the file cuts short is not, and does not read past the
// end.
func TestScanFindsKeysAtTheEdges(t *testing.T) {
	for text, kind := range map[string]string{
		keys.GHPToken:                     KindGitHub,
		keys.AnthropicKey:                 KindAnthropic,
		keys.AWSID:                        KindAWSKeyID,
		"PRIVATE KEY-----\n":              KindPrivateKey,
		"-----BEGIN RSA PRIVATE KEY-----": KindPrivateKey,
	} {
		got, _ := Scan([]byte(text), 0)
		require.Len(t, got, 1, "%.20q", text)
		assert.Equal(t, kind, got[0].Kind, "%.20q", text)
	}
	for _, text := range []string{"sk", "x sk-", "AKI", "gh", "ghp", "xo", "AIz", "ecretAccessKe", "PRIVATE KEY--", "_secret_access_ke"} {
		got, _ := Scan([]byte(text), 0)
		assert.Empty(t, got, text)
	}
}

// A scanner reused for a shorter file (Reset keeps its buffer) does not
// read the longer file's bytes that still lie past the shorter one's end.
func TestScannerResetForgetsTheLastFile(t *testing.T) {
	s := NewScanner(0)
	s.Write([]byte("x PRIVATE KEY-----"))
	require.Len(t, s.Finish(), 1)
	s.Reset()
	s.Write([]byte("x PRIVATE KEY----"))
	assert.Empty(t, s.Finish())
}

// An AWS secret access key counts as one when it starts within 256 bytes
// of the key id's end, and not from the 257th byte on.
func TestScanPairsAWSKeysWithin256Bytes(t *testing.T) {
	near, _ := Scan([]byte(keys.AWSID+strings.Repeat(" ", 255)+keys.AWSSecret), 0)
	require.Len(t, near, 1)
	assert.Equal(t, KindAWSSecret, near[0].Kind)
	far, _ := Scan([]byte(keys.AWSID+strings.Repeat(" ", 256)+keys.AWSSecret), 0)
	require.Len(t, far, 1)
	assert.Equal(t, KindAWSKeyID, far[0].Kind)
}
