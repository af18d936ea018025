package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/fakemodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	clitest.Cleanup()
	os.Exit(code)
}

const model = "claude-fake-1"

type harness struct {
	fake *fakemodel.Server
	bin  string
	tmp  string
}

func newHarness(t *testing.T) *harness {
	bin := clitest.Isolate(t)
	return &harness{fake: fakemodel.Start(t), bin: bin, tmp: t.TempDir()}
}

func (h *harness) executor(t *testing.T, mod func(*claude.Options)) *claude.Executor {
	opts := claude.Options{
		BinDir:  h.bin,
		BaseURL: h.fake.URL(),
		APIKey:  "sk-ant-fake",
		Model:   model,
		AskUser: clitest.AskUserCommand(t),
		Timeout: 2 * time.Minute,
		TempDir: h.tmp,
	}
	if mod != nil {
		mod(&opts)
	}
	return claude.New(opts)
}

func run(t *testing.T, ex backend.Executor, env backend.Env, prompt, session string) backend.Result {
	t.Helper()
	res, err := ex.Execute(context.Background(), backend.Request{Prompt: prompt, SessionID: session, Env: env})
	require.NoError(t, err)
	return res
}

func TestFreshSessionReportsID(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)

	start := time.Now()
	res := run(t, ex, env, "alpha", "")
	t.Logf("fresh visit took %s", time.Since(start))

	assert.Regexp(t, `^[0-9a-f-]{36}$`, res.SessionID)
	assert.Equal(t, "turn 1: alpha", res.Text)
	assert.Nil(t, res.NeedsInteraction)
	assert.Equal(t, ex.Fingerprint(""), res.Fingerprint)
	files, _ := filepath.Glob(filepath.Join(env.StateRoot, "projects", "*", res.SessionID+".jsonl"))
	assert.Len(t, files, 1, "session file under CLAUDE_CONFIG_DIR/projects/<slug>/")
	turns := h.fake.Turns()
	require.NotEmpty(t, turns)
	assert.Equal(t, []string{"alpha"}, turns[len(turns)-1].Prompts)
}

func TestResumeContinues(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)

	first := run(t, ex, env, "alpha", "")
	start := time.Now()
	second := run(t, ex, env, "beta", first.SessionID)
	t.Logf("resumed visit took %s", time.Since(start))

	assert.Equal(t, first.SessionID, second.SessionID)
	assert.Equal(t, "turn 2: alpha | beta", second.Text)
	turns := h.fake.Turns()
	assert.Equal(t, []string{"alpha", "beta"}, turns[len(turns)-1].Prompts)
}

func TestResumeMissingSessionIsNoSession(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)

	_, err := ex.Execute(context.Background(), backend.Request{Prompt: "x",
		SessionID: "0b7e2b8e-6d0f-4c55-9d0a-2a4b7c1e9f00", Env: env})
	require.ErrorIs(t, err, backend.ErrNoSession)
	assert.Equal(t, "NoSession", backend.ErrorType(err))
}

func TestForkLeavesOriginalUntouched(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)

	first := run(t, ex, env, "alpha", "")
	forked, err := ex.Execute(context.Background(), backend.Request{Prompt: "fork-beta", SessionID: first.SessionID, Fork: true, Env: env})
	require.NoError(t, err)
	assert.NotEqual(t, first.SessionID, forked.SessionID)
	assert.Equal(t, "turn 2: alpha | fork-beta", forked.Text)

	again := run(t, ex, env, "gamma", first.SessionID)
	assert.Equal(t, "turn 2: alpha | gamma", again.Text, "the original did not see the fork's turn")
}

func TestAskUserPausesAndAnswerResumes(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)

	asked := run(t, ex, env, "paint it\nASK_USER: which colour?", "")
	require.NotNil(t, asked.NeedsInteraction, "text: %q", asked.Text)
	assert.Equal(t, []backend.Question{{ID: "q1", Text: "which colour?"}}, asked.NeedsInteraction.Questions)
	assert.True(t, strings.HasPrefix(asked.NeedsInteraction.PendingToolUseID, "toolu_"), asked.NeedsInteraction.PendingToolUseID)
	require.NotEmpty(t, asked.SessionID)
	var sawCall bool
	for _, r := range h.fake.Turns() {
		if strings.HasPrefix(r.Reply, "tool:"+claude.AskUserTool) {
			sawCall = true
		}
	}
	assert.True(t, sawCall, "the fake model called %s", claude.AskUserTool)

	answered, err := ex.Execute(context.Background(), backend.Request{SessionID: asked.SessionID, Env: env,
		Answer: &backend.Answer{QuestionID: "q1", Text: "blue", PendingToolUseID: asked.NeedsInteraction.PendingToolUseID}})
	require.NoError(t, err)
	assert.Nil(t, answered.NeedsInteraction)
	assert.Equal(t, asked.SessionID, answered.SessionID)
	assert.True(t, strings.HasPrefix(answered.Text, "turn 2: paint it\nASK_USER: which colour? | "), answered.Text)
	assert.True(t, strings.HasSuffix(answered.Text, "blue"), answered.Text)
}

func TestStructuredOutput(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	res := run(t, h.executor(t, nil), env, `REPLY: {"verdict":"pass","score":3}`, "")
	assert.Equal(t, map[string]any{"verdict": "pass", "score": float64(3)}, res.Structured)
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	var beats atomic.Int32
	ex := h.executor(t, func(o *claude.Options) {
		o.Timeout = 4 * time.Second
		o.HeartbeatEvery = 500 * time.Millisecond
		o.Heartbeat = func(context.Context, any) { beats.Add(1) }
	})
	start := time.Now()
	_, err := ex.Execute(context.Background(), backend.Request{Prompt: "SLEEP: 60s", Env: env})
	require.ErrorIs(t, err, backend.ErrTimeout)
	assert.Less(t, time.Since(start), 20*time.Second)
	assert.GreaterOrEqual(t, beats.Load(), int32(3), "heartbeats while the CLI ran")
	assert.Empty(t, clitest.Processes(h.tmp), "the CLI's group (incl. its MCP server) is gone")
}

func TestCancelKillsProcessGroup(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	ex := h.executor(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	_, err := ex.Execute(ctx, backend.Request{Prompt: "SLEEP: 60s", Env: env})
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, clitest.Processes(h.tmp), "the CLI's group (incl. its MCP server) is gone")
}

func TestModelErrorIsExitError(t *testing.T) {
	h := newHarness(t)
	env := clitest.NewEnv(t)
	_, err := h.executor(t, nil).Execute(context.Background(), backend.Request{Prompt: "HTTP_ERROR: 400", Env: env})
	var ee *backend.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "ExitError", backend.ErrorType(err))
	assert.NotEmpty(t, ee.StderrTail)
	t.Logf("exit error: %v", err)
}

func TestNotInstalled(t *testing.T) {
	ex := claude.New(claude.Options{BinDir: t.TempDir()})
	_, err := ex.Execute(context.Background(), backend.Request{Prompt: "x", Env: clitest.NewEnv(t)})
	require.ErrorIs(t, err, backend.ErrNotInstalled)
}

func TestFingerprint(t *testing.T) {
	a := claude.New(claude.Options{Model: "m1", AllowedTools: []string{"Read", "Bash"}})
	b := claude.New(claude.Options{Model: "m1", AllowedTools: []string{"Bash", "Read"}, BaseURL: "http://elsewhere", Timeout: time.Hour})
	assert.Equal(t, a.Fingerprint(""), b.Fingerprint(""), "order of tools, endpoint and timeout do not matter")
	assert.NotEqual(t, a.Fingerprint(""), a.Fingerprint("m2"))
	assert.NotEqual(t, a.Fingerprint(""), claude.New(claude.Options{Model: "m1", AllowedTools: []string{"Read"}}).Fingerprint(""))
	assert.NotEqual(t, a.Fingerprint(""), claude.New(claude.Options{Model: "m1", AllowedTools: []string{"Read", "Bash"}, PermissionMode: "bypassPermissions"}).Fingerprint(""))
	assert.Len(t, a.Fingerprint(""), 64)
	var _ = errors.Is
}
