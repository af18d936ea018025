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
			// On line 3: at the start, and with each of its bytes once
			// on the end of the first pass (the scanner owns
			// scanBack+scanChunk bytes per pass and carries the rest),
			// and inside the second pass.
			const head = "line one\nline two\n"
			pads := []int{0, 1, 2*scanChunk - 100}
			for d := 0; d <= len(c.text); d++ {
				pads = append(pads, scanBack+scanChunk-len(head)-d)
			}
			for _, pad := range pads {
				// The tail fills the buffer, so that the first pass runs.
				text := head + strings.Repeat(" ", pad) + c.text + "\nline four\n" + strings.Repeat(" ", scanReach+scanBack)
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

// Two rule bytes in a row do not end the search for the second one.
func TestScanFindsAKeyAfterItsRuleByte(t *testing.T) {
	for _, text := range []string{"kk " + keys.AnthropicKey, "k " + keys.OpenAIKey} {
		got, _ := Scan([]byte(text), 0)
		assert.Len(t, got, 1, "%.20q", text)
	}
}

// The labelled forms of an AWS secret: the label may be followed by up to
// 12 quotes, colons, equals signs and blanks; the value is exactly 40
// base64 bytes (not the start of a longer, padded value); a label at the
// start or the end of a file is read without running past it.
func TestScanAWSSecretLabels(t *testing.T) {
	for text, found := range map[string]bool{
		"_secret_access_key=" + keys.AWSSecret:                             true,
		"aws_secret_access_key" + strings.Repeat(" ", 12) + keys.AWSSecret: true,
		"aws_secret_access_key" + strings.Repeat(" ", 13) + keys.AWSSecret: false,
		"aws_secret_access_key: " + keys.AWSSecret + " # prod":             true,
		"aws_secret_access_key: " + keys.AWSSecret + "==":                  false,
		"ecretAccessKey: " + keys.AWSSecret:                                true,
		"x_secret_access_key":                                              false,
		"x_secret_access_key ":                                             false,
	} {
		got, _ := Scan([]byte(text), 0)
		assert.Equal(t, found, len(got) == 1, "%.40q: %v", text, got)
	}
}

// Slack tokens at a file's start are found; a prefix the file cuts short
// is not read past its end.
func TestScanSlackAtTheEdges(t *testing.T) {
	got, _ := Scan([]byte(keys.SlackToken), 0)
	require.Len(t, got, 1)
	assert.Equal(t, KindSlack, got[0].Kind)
	for _, text := range []string{"xoxb", "xox", "a xoxb"} {
		got, _ := Scan([]byte(text), 0)
		assert.Empty(t, got, text)
	}
}

// A scanner remembers keep findings and counts them all, and its buffer
// stays the size it was made with however much is written.
func TestScannerKeepsAndCounts(t *testing.T) {
	text := []byte(strings.Repeat(keys.GHPToken+"\n", 3))
	got, total := Scan(text, 2)
	assert.Len(t, got, 2)
	assert.Equal(t, 3, total)
	got, total = Scan(text, 3)
	assert.Len(t, got, 3)
	assert.Equal(t, 3, total)

	s := NewScanner(0)
	size := cap(s.buf)
	for range 40 {
		s.Write(make([]byte, 100<<10))
	}
	assert.Equal(t, size, cap(s.buf))
	assert.Empty(t, s.Finish())
}

// Findings come back in line order, whichever rule found them first.
func TestScanFindingsAreInLineOrder(t *testing.T) {
	lines := []string{
		"STRIPE=" + keys.StripeKey,
		"plain text",
		"token=" + keys.GHPToken,
		"key=" + keys.GoogleKey,
		"ANTHROPIC_API_KEY=" + keys.AnthropicKey,
		"SLACK_TOKEN=" + keys.SlackToken,
		"export OPENAI_API_KEY=" + keys.OpenAIKey,
	}
	got := scanAll(t, strings.Join(lines, "\n")+"\n")
	var at []int
	for _, f := range got {
		at = append(at, f.Line)
	}
	assert.Equal(t, []int{1, 3, 4, 5, 6, 7}, at, "%v", got)
}
