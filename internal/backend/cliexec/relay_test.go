package cliexec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
)

// curlCLI is a CLI that speaks the Messages API with curl: it writes its
// environment where the test reads it, then makes five model calls of
// 400 tokens each, and exits 3 at the first one that is refused.
const curlCLI = `env > "$TETHER_TEST_OUT/env.txt"
i=0
while [ $i -lt 5 ]; do
  i=$((i+1))
  code=$(curl -s -o "$TETHER_TEST_OUT/body.txt" -w '%{http_code}' -H "x-api-key: $KEY" -H 'content-type: application/json' \
    -d '{"model":"m","messages":[{"role":"user","content":"go\nTOKENS: 400"}]}' "$BASE/v1/messages")
  echo "call $i $code"
  [ "$code" = 200 ] || { cat "$TETHER_TEST_OUT/body.txt" >&2; exit 3; }
done
`

// curlDriver gives the CLI the visit's endpoint and key as BASE and KEY.
type curlDriver struct{ out string }

func (curlDriver) Conversation(c *CLI, req agent.Request) Conversation {
	return Conversation{Model: "m"}
}

func (d curlDriver) Launch(_ context.Context, c *CLI, req agent.Request, v *Visit) (Launch, error) {
	return Launch{Env: []string{"BASE=" + v.BaseURL, "KEY=" + v.APIKey, "TETHER_TEST_OUT=" + d.out}, Output: &lines{}}, nil
}

// lines is an Output that keeps the CLI's lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Line(b []byte)  { l.mu.Lock(); l.all = append(l.all, string(b)); l.mu.Unlock() }
func (l *lines) Report() Report { return Report{Text: strings.Join(l.all, "\n")} }

// TestVisitGoesThroughTheModelRelay runs a CLI, unconfined (the relay on
// the worker's loopback, as under TETHER_SANDBOX=off or Landlock alone)
// and under the full sandbox (the relay's socket bound in, reached on the
// sandbox's loopback): its environment holds the visit's placeholder and
// never the key, the fake model, which refuses any other key, receives
// the real one, the live usage grows with every answer, and a budget of
// 1,000 tokens lets three calls of 400 through and refuses the fourth,
// which ends the visit with the budget named, as a finished visit with
// the metered usage.
func TestVisitGoesThroughTheModelRelay(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		testenv.Unavailable(t, "no curl in /usr/bin (apt-get install curl)")
	}
	f, ok := catalogue.Lookup("claude_code")
	require.True(t, ok)
	for _, mode := range []struct {
		name string
		sb   func(t *testing.T) *sandbox.Sandbox
	}{
		{"unconfined", func(*testing.T) *sandbox.Sandbox { return nil }},
		{"confined", func(t *testing.T) *sandbox.Sandbox { return sandboxtest.New(t) }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			fake := fakemodel.Start(t)
			bin := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(bin, f.CLI), []byte("#!/bin/sh\n"+curlCLI), 0o755))
			// The CLI writes where it works, which the sandbox lets it.
			work := t.TempDir()
			out := work
			sb := mode.sb(t)
			e := New(f, Options{BinDir: bin, BaseURL: fake.URL(), APIKey: fake.Key(), TempDir: t.TempDir(), Sandbox: sb,
				Env: []string{"HTTPS_PROXY=http://corp.invalid:3128", "HTTP_PROXY=http://corp.invalid:3128"}}, curlDriver{out}, nil, false)
			var (
				mu   sync.Mutex
				live []int64
			)
			ctx := context.Background()
			if sb != nil {
				ctx = sandbox.WithVisit(ctx, &sandbox.Visit{Node: "writer", Model: true})
			}
			req := agent.Request{NodeID: "writer", Visit: 1, Prompt: "go", Env: agent.Env{StateRoot: t.TempDir(), Workdir: work},
				Limits: []agent.Limit{{Name: "the budget of node writer", MaxTokens: 1000}},
				Progress: func(p agent.Progress) {
					mu.Lock()
					defer mu.Unlock()
					if n := p.Usage.Tokens(); len(live) == 0 || live[len(live)-1] != n {
						live = append(live, n)
					}
				}}
			res, err := e.Execute(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, "the budget of node writer is spent: 1200 tokens used, max_tokens is 1000", res.BudgetStop)
			assert.Equal(t, "call 1 200\ncall 2 200\ncall 3 200\ncall 4 400", res.Text)
			assert.Equal(t, int64(1200), res.Usage.Tokens())
			assert.Equal(t, res.Usage, res.Metered)
			assert.Len(t, fake.Turns(), 3)
			assert.Empty(t, fake.Refused())
			for _, r := range fake.Requests() {
				assert.Equal(t, fake.Key(), r.Key)
			}
			env, err := os.ReadFile(filepath.Join(out, "env.txt"))
			require.NoError(t, err)
			assert.NotContains(t, string(env), fake.Key(), "the CLI's environment never holds the key")
			assert.Contains(t, string(env), "KEY=tether-placeholder-")
			if sb == nil {
				assert.Contains(t, string(env), "NO_PROXY=127.0.0.1,localhost", "the loopback relay is kept off the worker's proxy")
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []int64{0, 400, 800, 1200}, withZero(live), "the live usage grows with each answer")
		})
	}
}

// withZero is live with a leading 0 when the first report already had
// tokens (a CLI that printed nothing before its first answer).
func withZero(live []int64) []int64 {
	if len(live) > 0 && live[0] != 0 {
		return append([]int64{0}, live...)
	}
	return live
}

// No process gets a model key by name: not through a node's env, the
// worker's pass list, nor a prefix, whatever the worker's environment
// holds. The executor's own value of the name (a placeholder) still goes.
func TestEnvironNeverPassesAModelKey(t *testing.T) {
	keys := catalogue.KeyVars()
	require.Contains(t, keys, "ANTHROPIC_API_KEY")
	for _, k := range keys {
		t.Setenv(k, "real-"+k)
	}
	t.Setenv("TETHER_TEST_OTHER", "passed")
	env := Environ(append(slices.Clone(keys), "*_API_KEY", "TETHER_TEST_OTHER", "*"), "GEMINI_API_KEY=placeholder")
	for _, kv := range env {
		assert.NotContains(t, kv, "real-", "a model key reached the process: %s", strings.SplitN(kv, "=", 2)[0])
	}
	assert.Contains(t, env, "TETHER_TEST_OTHER=passed")
	assert.Contains(t, env, "GEMINI_API_KEY=placeholder")
}
