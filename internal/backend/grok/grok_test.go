package grok_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/grok"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/testenv"
)

type harness struct {
	fake *fakemodel.Server
	ex   *cliexec.Executor
	env  agent.Env
	home string
}

func newHarness(t *testing.T, convention bool) *harness {
	bin := clitest.Isolate(t)
	fake := fakemodel.Start(t)
	home := t.TempDir()
	ex := grok.New(grok.Options{Options: cliexec.Options{
		BinDir: bin, BaseURL: fake.URL() + "/v1", APIKey: fake.Key(), Model: "fake-grok-1",
		Timeout: 2 * time.Minute, TempDir: t.TempDir(), Home: home,
	}, AskUserConvention: convention})
	return &harness{fake: fake, ex: ex, env: clitest.NewEnv(t), home: home}
}

// A visit is one headless run of the real CLI against the fake model: its
// final text is the visit's text, and it never resumes anything.
func TestVisit(t *testing.T) {
	h := newHarness(t, false)
	require.NoError(t, h.ex.Available())
	res, err := h.ex.Execute(context.Background(), agent.Request{Prompt: "-starts like a flag", Env: h.env})
	require.NoError(t, err)
	assert.Equal(t, "turn 1: -starts like a flag", res.Text)
	assert.Empty(t, res.SessionID, "grok keeps no conversation to resume")
	assert.False(t, res.Usage.CostKnown)
	assert.Equal(t, h.ex.Fingerprint(agent.Request{}), res.Fingerprint)
	reqs := h.fake.Requests()
	require.NotEmpty(t, reqs)
	assert.Equal(t, fakemodel.Chat, reqs[len(reqs)-1].API)

	_, err = h.ex.Execute(context.Background(), agent.Request{Prompt: "again", SessionID: "abc", Env: h.env})
	assert.True(t, errors.Is(err, agent.ErrNoSession), "%v", err)
}

// The CLI's own tools write and edit files in the working directory.
func TestEditsFiles(t *testing.T) {
	h := newHarness(t, false)
	require.NoError(t, os.WriteFile(filepath.Join(h.env.Workdir, "old.txt"), []byte("package x\n\nreturn 1\n"), 0o644))
	task := "fix it\nWRITE_FILE: new.txt\nhello\nworld\nEND_FILE\nEDIT_FILE: old.txt\nOLD:\nreturn 1\nNEW:\nreturn 2\nEND_EDIT"
	res, err := h.ex.Execute(context.Background(), agent.Request{Prompt: task, Env: h.env})
	require.NoError(t, err)
	assert.Equal(t, "turn 1: "+task, res.Text)
	b, err := os.ReadFile(filepath.Join(h.env.Workdir, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\nworld\n", string(b))
	b, err = os.ReadFile(filepath.Join(h.env.Workdir, "old.txt"))
	require.NoError(t, err)
	assert.Equal(t, "package x\n\nreturn 2\n", string(b))
}

// ask_user is the reply convention: the visit pauses with the questions.
func TestAskUserConvention(t *testing.T) {
	h := newHarness(t, true)
	res, err := h.ex.Execute(context.Background(), agent.Request{Prompt: "plan it\nASK_USER: which database?", Env: h.env})
	require.NoError(t, err)
	require.NotNil(t, res.NeedsInteraction)
	require.Len(t, res.NeedsInteraction.Questions, 1)
	assert.Equal(t, "which database?", res.NeedsInteraction.Questions[0].Text)
	assert.Nil(t, res.Structured)
	last := h.fake.Requests()[len(h.fake.Requests())-1]
	assert.Contains(t, strings.Join(last.Prompts, "\n"), grok.AskUserPrefix, "the instructions went with the prompt")
}

func TestNoAskUserLeavesTheConventionOut(t *testing.T) {
	h := newHarness(t, true)
	res, err := h.ex.Execute(context.Background(), agent.Request{Prompt: "plan it\nASK_USER: which database?", Env: h.env,
		Settings: agent.Settings{NoAskUser: true}})
	require.NoError(t, err)
	assert.Nil(t, res.NeedsInteraction, "a node that may not ask paused")
	assert.Contains(t, res.Text, "ASK_USER: which database?")
	last := h.fake.Requests()[len(h.fake.Requests())-1]
	assert.NotContains(t, strings.Join(last.Prompts, "\n"), grok.AskUserInstructions, "no instructions went with the prompt")
}

// The key stays with the worker's model relay, and what the CLI gets in
// its place reaches it in its environment only: never its command line,
// where the CLI would save it into its settings file.
func TestKeyNeverOnDisk(t *testing.T) {
	h := newHarness(t, false)
	_, err := h.ex.Execute(context.Background(), agent.Request{Prompt: "hello", Env: h.env})
	require.NoError(t, err)
	for _, root := range []string{h.home, h.env.Workdir, h.env.StateRoot} {
		require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.NotContains(t, string(b), h.fake.Key(), "the key was written to %s", p)
			return nil
		}))
	}
}

// grok, confined as a worker confines it, never holds the model's key: the
// worker's model relay does, and the CLI, its processes and its files have
// only the visit's placeholder (clitest.KeyStays).
func TestKeyStaysWithTheWorker(t *testing.T) {
	clitest.KeyStays(t, clitest.Suite{Backend: grok.Configured})
}

// A spent budget stops grok between two model calls (clitest.BudgetStop).
func TestBudgetStopsBetweenCalls(t *testing.T) {
	clitest.BudgetStop(t, clitest.Suite{Backend: grok.Configured})
}

// A failed model call is a failed visit, not a reply: the CLI prints it as
// the assistant's message and exits 0.
func TestFailedModelCall(t *testing.T) {
	h := newHarness(t, false)
	_, err := h.ex.Execute(context.Background(), agent.Request{Prompt: "HTTP_ERROR: 400", Env: h.env})
	var ee *agent.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Contains(t, ee.StderrTail, "model call failed")
}

// BenchmarkVisit is one fresh visit of the real CLI against the fake model:
// what a grok visit costs beside the model's own time.
func BenchmarkVisit(b *testing.B) {
	bin := testenv.CLIBin(b)
	fake := fakemodel.New()
	defer fake.Close()
	ex := grok.New(grok.Options{Options: cliexec.Options{BinDir: bin, BaseURL: fake.URL() + "/v1", APIKey: fake.Key(), Model: "fake-grok-1", TempDir: b.TempDir(), Home: b.TempDir()}})
	env := agent.Env{StateRoot: b.TempDir(), Workdir: b.TempDir()}
	b.ResetTimer()
	for range b.N {
		if _, err := ex.Execute(context.Background(), agent.Request{Prompt: "hello", Env: env}); err != nil {
			b.Fatal(err)
		}
	}
}
