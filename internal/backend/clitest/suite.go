package clitest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/catalogue/transcripts"
	"github.com/tether-run/tether/internal/conversation"
	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv/files"
	"github.com/tether-run/tether/internal/transcript"
)

// Harness is what a suite's New gets to build an executor: the fake model,
// the CLIs' bin dir, the ask_user server and a scratch dir for visits.
type Harness struct {
	Fake    *fakemodel.Server
	BinDir  string
	AskUser []string
	// Scratch is the executor's TempDir; no process mentioning it may
	// outlive a killed visit.
	Scratch string
	// Timeout, Heartbeat and HeartbeatEvery are what the executor must use.
	Timeout        time.Duration
	Heartbeat      func(ctx context.Context, details any)
	HeartbeatEvery time.Duration
	// AskUserGrace is what the executor must use (zero: its default).
	AskUserGrace time.Duration
	// Sandbox confines the CLI as a production worker does, with the
	// fake model as its model's endpoint.
	Sandbox *sandbox.Sandbox
}

// Suite describes one real-CLI backend to the shared tests. What the
// backend says of itself (its facts: name, wire, settings it honours)
// the suite reads from the catalogue.
type Suite struct {
	// Backend builds the executor under test from the options the
	// worker's configuration would give it: the backend's Configured.
	Backend func(cliexec.Options) agent.Backend
	// AskUserTool is the tool name the fake model sees for ask_user; empty
	// for a backend that asks through the structured-output convention.
	AskUserTool string
	// PendingPrefix is how the pending tool-use id starts ("" when the
	// backend has none).
	PendingPrefix string
	// ReadOnlyDenial is what the CLI answers a write with under
	// permissions: read-only, as the fake model sees it in the tool
	// result; empty for a backend that does not even offer its write tools
	// then (their names are in HiddenWhenReadOnly).
	ReadOnlyDenial     string
	HiddenWhenReadOnly []string
}

// facts are the catalogue's facts of the suite's backend.
func (s Suite) facts(t testing.TB) agent.Facts {
	t.Helper()
	f, ok := catalogue.Lookup(s.Backend(cliexec.Options{}).Name())
	require.True(t, ok, "the suite's backend is not in the catalogue")
	return f
}

// New builds the executor under test for h: the options of h.Options, at
// the fake model's endpoint for the backend's wire, with its test model.
func (s Suite) New(h *Harness) agent.Backend {
	return s.Backend(h.For(s.Backend(cliexec.Options{}).Name()))
}

// missingID is a well-formed session id (for every CLI's layout) that
// no test creates.
const missingID = "0b7e2b8e-6d0f-4c55-9d0a-2a4b7c1e9f00"

// hasSession reports whether the backend's packer finds session id, as
// the CLI wrote it, under env: what the worker packs is what the CLI
// resumes from.
func hasSession(b agent.Backend, env agent.Env, id string) bool {
	p := b.Packer(env)
	return p != nil && p.HasSession(context.Background(), id)
}

// Expect is the usage a CLI speaking wire (agent.Facts.Wire) reports for
// what the fake model counted: the Messages API reports cache writes, the
// OpenAI APIs count them as plain input. No suite's model has a price, so
// no cost is known.
func Expect(wire string, u fakemodel.Usage) agent.Usage {
	if wire == agent.WireAnthropic {
		return agent.Usage{InputTokens: int64(u.Input), OutputTokens: int64(u.Output),
			CacheReadTokens: int64(u.CacheRead), CacheWriteTokens: int64(u.CacheWrite)}
	}
	return agent.Usage{InputTokens: int64(u.Input + u.CacheWrite), OutputTokens: int64(u.Output), CacheReadTokens: int64(u.CacheRead)}
}

// Options are the executor options a suite's New passes for h: the CLIs'
// bin dir, the fake model at baseURL with its key, model, the ask_user
// server and the suite's limits and heartbeat. A backend without an MCP
// client ignores AskUser.
func (h *Harness) Options(baseURL, model string) cliexec.Options {
	return cliexec.Options{
		BinDir:         h.BinDir,
		BaseURL:        baseURL,
		APIKey:         h.Fake.Key(),
		Model:          model,
		AskUser:        h.AskUser,
		AskUserGrace:   h.AskUserGrace,
		Timeout:        h.Timeout,
		Heartbeat:      h.Heartbeat,
		HeartbeatEvery: h.HeartbeatEvery,
		TempDir:        h.Scratch,
		Sandbox:        h.Sandbox,
	}
}

// For is Options for backend name: the fake model's endpoint for the
// backend's wire, and Model(name).
func (h *Harness) For(name string) cliexec.Options {
	f, _ := catalogue.Lookup(name)
	return h.Options(BaseURL(h.Fake, f.Wire), Model(name))
}

func (s Suite) harness(t *testing.T) *Harness { return NewHarness(t) }

// NewHarness isolates the test (Isolate) and starts the fake model: what a
// backend's own real-CLI tests run against, beside the suite.
func NewHarness(t *testing.T) *Harness {
	t.Helper()
	bin := Isolate(t)
	return &Harness{Fake: fakemodel.Start(t), BinDir: bin, AskUser: AskUserCommand(t),
		Scratch: t.TempDir(), Timeout: 2 * time.Minute, Sandbox: sandboxtest.New(t)}
}

func execute(t *testing.T, b agent.Backend, req agent.Request) agent.Result {
	t.Helper()
	res, err := b.Execute(context.Background(), req)
	require.NoError(t, err)
	return res
}

func lastPrompts(t *testing.T, f *fakemodel.Server) []string {
	t.Helper()
	turns := f.Turns()
	require.NotEmpty(t, turns, "the fake model saw no conversation request")
	return turns[len(turns)-1].Prompts
}

// Run runs the shared tests; every one starts from an empty state root and
// a fresh HOME.
func Run(t *testing.T, s Suite) {
	t.Run("Fingerprint", func(t *testing.T) { fingerprint(t, s) })
	t.Run("FreshSessionReportsID", func(t *testing.T) {
		h := s.harness(t)
		env := NewEnv(t)
		b := s.New(h)
		start := time.Now()
		res := execute(t, b, agent.Request{Prompt: "alpha", Env: env})
		t.Logf("fresh visit: %s", time.Since(start).Round(time.Millisecond))
		assert.NotEmpty(t, res.SessionID)
		assert.Equal(t, "turn 1: alpha", res.Text)
		assert.Nil(t, res.NeedsInteraction)
		assert.Len(t, res.Fingerprint, 64)
		assert.True(t, hasSession(b, env, res.SessionID), "session %s on disk under %s", res.SessionID, env.StateRoot)
		assert.Equal(t, []string{"alpha"}, lastPrompts(t, h.Fake))
	})
	t.Run("ResumeContinues", func(t *testing.T) {
		h := s.harness(t)
		env := NewEnv(t)
		b := s.New(h)
		first := execute(t, b, agent.Request{Prompt: "alpha", Env: env})
		start := time.Now()
		second := execute(t, b, agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: env})
		t.Logf("resumed visit: %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, first.SessionID, second.SessionID)
		assert.Equal(t, "turn 2: alpha | beta", second.Text)
		assert.Equal(t, first.Fingerprint, second.Fingerprint)
		assert.Equal(t, []string{"alpha", "beta"}, lastPrompts(t, h.Fake))
	})
	t.Run("ResumeMissingIsNoSession", func(t *testing.T) {
		h := s.harness(t)
		env := NewEnv(t)
		_, err := s.New(h).Execute(context.Background(), agent.Request{Prompt: "x", SessionID: missingID, Env: env})
		require.ErrorIs(t, err, agent.ErrNoSession)
		assert.Equal(t, "NoSession", agent.ErrorType(err))
		t.Logf("error: %v", err)
	})
	t.Run("ForkLeavesOriginal", func(t *testing.T) {
		h := s.harness(t)
		env := NewEnv(t)
		b := s.New(h)
		first := execute(t, b, agent.Request{Prompt: "alpha", Env: env})
		forked := execute(t, b, agent.Request{Prompt: "fork-beta", SessionID: first.SessionID, Fork: true, Env: env})
		assert.NotEqual(t, first.SessionID, forked.SessionID)
		assert.Equal(t, "turn 2: alpha | fork-beta", forked.Text)
		again := execute(t, b, agent.Request{Prompt: "gamma", SessionID: first.SessionID, Env: env})
		assert.Equal(t, "turn 2: alpha | gamma", again.Text, "the original did not see the fork's turn")
	})
	t.Run("AskUserThenAnswer", func(t *testing.T) {
		h := s.harness(t)
		env := NewEnv(t)
		b := s.New(h)
		asked := execute(t, b, agent.Request{Prompt: "paint it\nASK_USER: which colour?", Env: env})
		require.NotNil(t, asked.NeedsInteraction, "no interaction; final text %q", asked.Text)
		assert.Equal(t, []agent.Question{{ID: "q1", Text: "which colour?"}}, asked.NeedsInteraction.Questions)
		require.NotEmpty(t, asked.SessionID)
		assert.True(t, hasSession(b, env, asked.SessionID), "session files are on disk while paused")
		if s.PendingPrefix != "" {
			assert.True(t, strings.HasPrefix(asked.NeedsInteraction.PendingToolUseID, s.PendingPrefix),
				"pending tool use id %q", asked.NeedsInteraction.PendingToolUseID)
		}
		if s.AskUserTool != "" {
			var called bool
			for _, r := range h.Fake.Turns() {
				called = called || strings.HasPrefix(r.Reply, "tool:"+s.AskUserTool)
			}
			assert.True(t, called, "the fake model called %s", s.AskUserTool)
		}
		answered := execute(t, b, agent.Request{SessionID: asked.SessionID, Env: env, Answer: &agent.Answer{
			QuestionID: "q1", Text: "blue", PendingToolUseID: asked.NeedsInteraction.PendingToolUseID}})
		assert.Nil(t, answered.NeedsInteraction)
		assert.Equal(t, asked.SessionID, answered.SessionID)
		assert.True(t, strings.HasPrefix(answered.Text, "turn 2: paint it\nASK_USER: which colour? | "), answered.Text)
		assert.True(t, strings.HasSuffix(answered.Text, "\nblue"), answered.Text)
	})
	t.Run("NoAskUserNeverPauses", func(t *testing.T) {
		// ask_user: false on the node: the CLI gets no ask_user tool (no
		// MCP server starts) nor the reply convention, so a model that
		// would ask writes its question as a plain reply, and the visit
		// ends there.
		h := s.harness(t)
		res := execute(t, s.New(h), agent.Request{Prompt: "paint it\nASK_USER: which colour?", Env: NewEnv(t),
			Settings: agent.Settings{NoAskUser: true}})
		assert.Nil(t, res.NeedsInteraction, "a node that may not ask paused")
		assert.Contains(t, res.Text, "ASK_USER: which colour?")
		turns := h.Fake.Turns()
		require.NotEmpty(t, turns)
		for _, r := range turns {
			for _, tool := range r.Tools {
				assert.False(t, strings.HasSuffix(tool, "ask_user"), "the model was offered %s", tool)
			}
			assert.NotContains(t, string(r.Body), "one line per question, each of the form",
				"the model was taught the reply convention")
		}
	})
	t.Run("AskUserThenAgentKeepsGoing", func(t *testing.T) {
		if s.AskUserTool == "" {
			t.Skip("the backend asks through a convention, not a tool")
		}
		h := s.harness(t)
		// The model goes on for 10 minutes after the question; the
		// executor must end the turn within its grace instead. The bound
		// is far beyond a CLI's start on a loaded machine (opencode took
		// 81 s at load 16) and far below the model's 10 minutes.
		h.AskUserGrace, h.Timeout = 2*time.Second, 15*time.Minute
		env := NewEnv(t)
		b := s.New(h)
		start := time.Now()
		asked := execute(t, b, agent.Request{Prompt: "ASK_USER: which colour?\nSLEEP_AFTER_TOOL: 600s", Env: env})
		t.Logf("the executor ended the turn after %s", time.Since(start).Round(time.Millisecond))
		assert.Less(t, time.Since(start), 5*time.Minute)
		require.NotNil(t, asked.NeedsInteraction)
		require.NotEmpty(t, asked.SessionID)
		WaitGone(t, h.Scratch, "the visit's process group")
		answered := execute(t, b, agent.Request{SessionID: asked.SessionID, Env: env, Answer: &agent.Answer{
			QuestionID: "q1", Text: "blue", PendingToolUseID: asked.NeedsInteraction.PendingToolUseID}})
		assert.True(t, strings.HasPrefix(answered.Text, "turn 2: "), answered.Text)
		assert.True(t, strings.HasSuffix(answered.Text, "\nblue"), answered.Text)
	})
	t.Run("StructuredOutput", func(t *testing.T) {
		h := s.harness(t)
		res := execute(t, s.New(h), agent.Request{Prompt: `REPLY: {"verdict":"pass","score":3}`, Env: NewEnv(t)})
		assert.Equal(t, map[string]any{"verdict": "pass", "score": float64(3)}, res.Structured)
	})
	t.Run("TimeoutKillsProcessGroup", func(t *testing.T) {
		h := s.harness(t)
		var beats atomic.Int32
		h.Timeout, h.HeartbeatEvery = 4*time.Second, 500*time.Millisecond
		h.Heartbeat = func(context.Context, any) { beats.Add(1) }
		start := time.Now()
		_, err := s.New(h).Execute(context.Background(), agent.Request{Prompt: "SLEEP: 60s", Env: NewEnv(t)})
		require.ErrorIs(t, err, agent.ErrTimeout)
		assert.Equal(t, "Timeout", agent.ErrorType(err))
		// The bound is the timeout's, with room for a busy machine: a CLI
		// that outlived it would run for its whole minute.
		assert.Less(t, time.Since(start), 40*time.Second)
		assert.GreaterOrEqual(t, beats.Load(), int32(3), "heartbeats while the CLI ran")
		WaitGone(t, h.Scratch, "the visit's process group")
	})
	t.Run("CancelKillsProcessGroup", func(t *testing.T) {
		h := s.harness(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel once the CLI is in its turn (the fake model holds its
		// request), never after a fixed time: on a busy machine the CLI
		// may not even have started by then, and there would be no group
		// to kill.
		go func() {
			defer cancel()
			deadline := time.Now().Add(2 * time.Minute)
			for len(h.Fake.Turns()) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}()
		_, err := s.New(h).Execute(ctx, agent.Request{Prompt: "SLEEP: 60s", Env: NewEnv(t)})
		require.ErrorIs(t, err, context.Canceled)
		require.NotEmpty(t, h.Fake.Turns(), "the CLI was cancelled in its turn")
		WaitGone(t, h.Scratch, "the visit's process group")
	})
	t.Run("ModelErrorIsExitError", func(t *testing.T) {
		h := s.harness(t)
		_, err := s.New(h).Execute(context.Background(), agent.Request{Prompt: "HTTP_ERROR: 400", Env: NewEnv(t)})
		var ee *agent.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "ExitError", agent.ErrorType(err))
		assert.Contains(t, ee.StderrTail, "400")
		t.Logf("error: %v", err)
	})
	t.Run("UsageIsTheVisitsOwn", func(t *testing.T) { visitUsage(t, s) })
	t.Run("ProgressWhileRunning", func(t *testing.T) { progress(t, s) })
	t.Run("RoundTripAcrossRoots", func(t *testing.T) { roundTrip(t, s) })
	t.Run("IncrementalPartsAcrossRoots", func(t *testing.T) { incrementalRoundTrip(t, s) })
	t.Run("EditWritesAndEditsFiles", func(t *testing.T) { editFiles(t, s) })
	t.Run("ReadOnlyLeavesFiles", func(t *testing.T) { readOnly(t, s) })
	t.Run("PersistedTurnCueEditsOnResume", func(t *testing.T) { persistedCue(t, s) })
	t.Run("PlantedFilesAreRefused", func(t *testing.T) { planted(t, s) })
	t.Run("KeyStaysWithTheWorker", func(t *testing.T) { KeyStays(t, s) })
	t.Run("BudgetStopsBetweenCalls", func(t *testing.T) { BudgetStop(t, s) })
	if s.facts(t).Persist {
		// A backend without persist keeps no session to read.
		t.Run("TranscriptReadsTheSession", func(t *testing.T) { transcriptOf(t, s) })
	}
	t.Run("NotInstalled", func(t *testing.T) {
		h := s.harness(t)
		h.BinDir = t.TempDir()
		_, err := s.New(h).Execute(context.Background(), agent.Request{Prompt: "x", Env: NewEnv(t)})
		require.ErrorIs(t, err, agent.ErrNotInstalled)
		assert.Equal(t, "NotInstalled", agent.ErrorType(err))
	})
}

// roundTrip creates a session in root A / working directory X, packs it,
// unpacks it into an empty root B / working directory Y, and resumes it
// there; an id whose files are absent from B is the typed missing session.
func roundTrip(t *testing.T, s Suite) {
	ctx := context.Background()
	h := s.harness(t)
	b := s.New(h)
	envA, envB := NewEnv(t), NewEnv(t)

	first := execute(t, b, agent.Request{Prompt: "alpha", Env: envA})
	packA := b.Packer(envA)
	require.NotNil(t, packA, "a persist backend has a packer")
	blob, err := packA.PackSession(ctx, first.SessionID)
	require.NoError(t, err)
	assert.True(t, packA.HasSession(ctx, first.SessionID))

	packB := b.Packer(envB)
	assert.False(t, packB.HasSession(ctx, first.SessionID), "root B starts empty")
	require.NoError(t, packB.UnpackSession(ctx, first.SessionID, blob))
	assert.True(t, packB.HasSession(ctx, first.SessionID))

	second := execute(t, b, agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: envB})
	assert.Equal(t, first.SessionID, second.SessionID)
	assert.Equal(t, "turn 2: alpha | beta", second.Text, "the resumed conversation remembers root A's turn")
	assert.Equal(t, []string{"alpha", "beta"}, lastPrompts(t, h.Fake))

	other := execute(t, b, agent.Request{Prompt: "elsewhere", Env: envA})
	assert.False(t, packB.HasSession(ctx, other.SessionID))
	_, err = b.Execute(ctx, agent.Request{Prompt: "x", SessionID: other.SessionID, Env: envB})
	require.ErrorIs(t, err, agent.ErrNoSession, "a session whose files are not in root B")
}

// incrementalPacker is the packer's incremental side (packer.Packer).
type incrementalPacker interface {
	PackDelta(ctx context.Context, sessionID string, base *packer.Manifest) ([]byte, *packer.Manifest, error)
	UnpackParts(ctx context.Context, sessionID string, parts ...[]byte) (*packer.Manifest, error)
}

// incrementalRoundTrip carries a real CLI's conversation across three
// empty roots as a base and the parts after it: a turn in root B is an
// incremental pack; then every file the turn changed is cut back to what
// it held after the first turn, as a compaction rewrites a transcript
// shorter, and the next turn's pack carries the rewritten files whole;
// root C assembles base and both parts, and the CLI resumes the cut-back
// conversation there. (A CLI whose turn adds files, such as a database's
// log, has them removed too, and its next pack is a new base.)
func incrementalRoundTrip(t *testing.T, s Suite) {
	ctx := context.Background()
	h := s.harness(t)
	b := s.New(h)
	envA, envB, envC := NewEnv(t), NewEnv(t), NewEnv(t)
	packerOf := func(env agent.Env) incrementalPacker {
		p, ok := b.Packer(env).(incrementalPacker)
		require.True(t, ok, "the backend's packer packs incrementally")
		return p
	}

	first := execute(t, b, agent.Request{Prompt: "alpha", Env: envA})
	base, _, err := packerOf(envA).PackDelta(ctx, first.SessionID, nil)
	require.NoError(t, err)

	mB, err := packerOf(envB).UnpackParts(ctx, first.SessionID, base)
	require.NoError(t, err)
	afterFirst := snapshotFiles(t, envB.StateRoot)
	second := execute(t, b, agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: envB})
	assert.Equal(t, "turn 2: alpha | beta", second.Text)
	d1, m1, err := packerOf(envB).PackDelta(ctx, first.SessionID, mB)
	require.NoError(t, err)
	kindOf := func(blob []byte) string {
		hd, err := packer.ReadHeader(blob)
		require.NoError(t, err)
		return hd.Kind
	}
	assert.Equal(t, packer.KindDelta, kindOf(d1), "a resumed turn packs as a part")

	cut := 0
	for rel, was := range afterFirst {
		full := filepath.Join(envB.StateRoot, rel)
		if files.Read(t, envB.StateRoot, rel) != was {
			require.NoError(t, os.WriteFile(full+".tmp", []byte(was), 0o600))
			require.NoError(t, os.Rename(full+".tmp", full))
			cut++
		}
	}
	require.NotZero(t, cut, "the turn changed the transcript")
	// A file the turn added (a database's write-ahead log) would replay
	// the turn: it goes too, and the next pack is then whole.
	for rel := range snapshotFiles(t, envB.StateRoot) {
		if _, ok := afterFirst[rel]; !ok {
			require.NoError(t, os.Remove(filepath.Join(envB.StateRoot, rel)))
		}
	}
	third := execute(t, b, agent.Request{Prompt: "gamma", SessionID: first.SessionID, Env: envB})
	assert.Equal(t, "turn 2: alpha | gamma", third.Text, "the cut-back conversation lost beta")
	d2, _, err := packerOf(envB).PackDelta(ctx, first.SessionID, m1)
	require.NoError(t, err)
	parts := [][]byte{base, d1, d2}
	if kindOf(d2) != packer.KindDelta {
		parts = [][]byte{d2} // a file went away: a new base
	}

	_, err = packerOf(envC).UnpackParts(ctx, first.SessionID, parts...)
	require.NoError(t, err)
	fourth := execute(t, b, agent.Request{Prompt: "delta", SessionID: first.SessionID, Env: envC})
	assert.Equal(t, "turn 3: alpha | gamma | delta", fourth.Text, "root C holds the conversation as root B left it")
}

// snapshotFiles reads every regular file under root, by relative path.
func snapshotFiles(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	for _, rel := range files.List(t, root) {
		if fi, err := os.Lstat(filepath.Join(root, rel)); err == nil && fi.Mode().IsRegular() {
			out[rel] = files.Read(t, root, rel)
		}
	}
	return out
}

// fileTask writes new.txt and edits old.txt, which fileTaskUnder creates.
const fileTask = "fix it\n" +
	"WRITE_FILE: new.txt\nhello\nworld\nEND_FILE\n" +
	"EDIT_FILE: old.txt\nOLD:\nreturn 1\nNEW:\nreturn 2\nEND_EDIT"

const oldText = "package x\n\nreturn 1\n"

func readFile(t *testing.T, env agent.Env, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Workdir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "<absent>"
	}
	require.NoError(t, err)
	return string(b)
}

// toolResults are the tool results the fake model was sent.
func toolResults(f *fakemodel.Server) []string {
	var out []string
	for _, r := range f.Turns() {
		if r.AfterToolResult {
			out = append(out, r.ToolResult)
		}
	}
	return out
}

// fileTaskUnder runs fileTask in a fresh working directory holding old.txt,
// with the given permission level; the visit must complete with the
// model's normal final text.
func fileTaskUnder(t *testing.T, s Suite, permissions string) (*Harness, agent.Env) {
	h := s.harness(t)
	env := NewEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(env.Workdir, "old.txt"), []byte(oldText), 0o644))
	res := execute(t, s.New(h), agent.Request{Prompt: fileTask, Env: env,
		Settings: agent.Settings{Permissions: permissions}})
	assert.Equal(t, "turn 1: "+fileTask, res.Text, "the model's final text after the last tool result")
	return h, env
}

// editFiles: with permissions: edit, the CLI's own tools write a new file
// and edit an existing one in the working directory.
func editFiles(t *testing.T, s Suite) {
	h, env := fileTaskUnder(t, s, agent.PermissionEdit)
	assert.Equal(t, "hello\nworld\n", readFile(t, env, "new.txt"))
	assert.Equal(t, "package x\n\nreturn 2\n", readFile(t, env, "old.txt"))
	results := toolResults(h.Fake)
	assert.GreaterOrEqual(t, len(results), 2, "the fake model saw a tool result after each call: %q", results)
	for _, r := range h.Fake.Turns() {
		t.Logf("model: %.120q <- %.160q", r.Reply, r.ToolResult)
	}
}

// readOnly: with permissions: read-only, the same task leaves the files as
// they were and the visit still completes.
func readOnly(t *testing.T, s Suite) {
	h, env := fileTaskUnder(t, s, agent.PermissionReadOnly)
	assert.Equal(t, "<absent>", readFile(t, env, "new.txt"))
	assert.Equal(t, oldText, readFile(t, env, "old.txt"))
	results := toolResults(h.Fake)
	if s.ReadOnlyDenial != "" {
		var denied int
		for _, r := range results {
			if strings.Contains(r, s.ReadOnlyDenial) {
				denied++
			}
		}
		assert.Equal(t, 2, denied, "both writes were refused with %q: %q", s.ReadOnlyDenial, results)
	}
	for _, r := range h.Fake.Turns() {
		for _, hidden := range s.HiddenWhenReadOnly {
			assert.NotContains(t, r.Tools, hidden, "read-only offers the model no %s tool", hidden)
		}
	}
}

// persistedCue: a turn-2 cue in the first prompt edits the file only on the
// visit that really resumes the conversation, here after a pack and an
// unpack into another root; a fresh conversation given the same second
// prompt never reaches turn 2.
func persistedCue(t *testing.T, s Suite) {
	ctx := context.Background()
	h := s.harness(t)
	b := s.New(h)
	edit := agent.Settings{Permissions: agent.PermissionEdit}
	const first = "first visit\nEDIT_FILE@2: notes.txt\nOLD:\nv1\nNEW:\nv2\nEND_EDIT"
	envA, envB, envC := NewEnv(t), NewEnv(t), NewEnv(t)
	for _, env := range []agent.Env{envA, envB, envC} {
		require.NoError(t, os.WriteFile(filepath.Join(env.Workdir, "notes.txt"), []byte("v1\n"), 0o644))
	}
	one := execute(t, b, agent.Request{Prompt: first, Env: envA, Settings: edit})
	assert.Equal(t, "v1\n", readFile(t, envA, "notes.txt"), "turn 1 does not run a turn-2 cue")
	blob, err := b.Packer(envA).PackSession(ctx, one.SessionID)
	require.NoError(t, err)
	require.NoError(t, b.Packer(envB).UnpackSession(ctx, one.SessionID, blob))
	// As on another machine, the first visit's directories are gone.
	require.NoError(t, os.RemoveAll(envA.Workdir))
	require.NoError(t, os.RemoveAll(envA.StateRoot))

	two := execute(t, b, agent.Request{Prompt: "second visit", SessionID: one.SessionID, Env: envB, Settings: edit})
	assert.Equal(t, "turn 2: "+first+" | second visit", two.Text)
	assert.Equal(t, "v2\n", readFile(t, envB, "notes.txt"), "the resumed turn 2 ran the cue")

	execute(t, b, agent.Request{Prompt: "second visit", Env: envC, Settings: edit})
	assert.Equal(t, "v1\n", readFile(t, envC, "notes.txt"), "a fresh conversation is at turn 1")
}

// visitUsage: each visit reports exactly what the fake model counted for
// its own requests, never the conversation's earlier visits, whether it
// starts, resumes or forks the conversation; and the worker's model relay
// read the same in the answers the CLI streamed or got whole.
func visitUsage(t *testing.T, s Suite) {
	h := s.harness(t)
	env := NewEnv(t)
	b := s.New(h)
	visit := func(req agent.Request) agent.Result {
		t.Helper()
		h.Fake.Reset()
		res := execute(t, b, req)
		assert.Equal(t, Expect(s.facts(t).Wire, h.Fake.Usage()), res.Usage, "the usage of visit %q is what the model counted for it", req.Prompt)
		assert.Equal(t, Expect(s.facts(t).Wire, h.Fake.Usage()), res.Metered, "the worker's model relay read the same in the model's answers")
		return res
	}
	first := visit(agent.Request{Prompt: "alpha", Env: env})
	// One request, which writes the conversation's system tokens to the cache.
	assert.Equal(t, Expect(s.facts(t).Wire, fakemodel.Usage{Input: 20, Output: 8, CacheWrite: 1000}), first.Usage)
	assert.False(t, first.Usage.CostKnown, "the fake model has no price")
	assert.Zero(t, first.Usage.CostUSD)

	second := visit(agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: env})
	assert.Equal(t, Expect(s.facts(t).Wire, fakemodel.Usage{Input: 40, Output: 10, CacheRead: 1000}), second.Usage)

	forked := visit(agent.Request{Prompt: "gamma", SessionID: first.SessionID, Fork: true, Env: env})
	assert.Equal(t, Expect(s.facts(t).Wire, fakemodel.Usage{Input: 60, Output: 12, CacheRead: 1000}), forked.Usage,
		"a fork of the two-turn conversation counts only its own turn")

	// A visit of several requests (tool calls) sums them.
	require.NoError(t, os.WriteFile(filepath.Join(env.Workdir, "old.txt"), []byte(oldText), 0o644))
	h.Fake.Reset()
	res := execute(t, b, agent.Request{Prompt: fileTask, Env: env, Settings: agent.Settings{Permissions: agent.PermissionEdit}})
	turns := h.Fake.Turns()
	require.Greater(t, len(turns), 2, "the file task takes a request per tool call")
	assert.Equal(t, Expect(s.facts(t).Wire, h.Fake.Usage()), res.Usage, "the usage of %d requests", len(turns))
	assert.Equal(t, Expect(s.facts(t).Wire, h.Fake.Usage()), res.Metered, "the relay's count of %d requests", len(turns))
}

// progress: while the CLI runs, the executor reports what it does (its tool
// calls, with the file they touch), the reply text and the tokens so far,
// each report bounded.
func progress(t *testing.T, s Suite) {
	h := s.harness(t)
	env := NewEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(env.Workdir, "old.txt"), []byte(oldText), 0o644))
	var (
		mu   sync.Mutex
		seen []agent.Progress
	)
	res := execute(t, s.New(h), agent.Request{Prompt: fileTask, Env: env, NodeID: "writer", Visit: 3,
		Settings: agent.Settings{Permissions: agent.PermissionEdit},
		Progress: func(p agent.Progress) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, p)
		}})
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	var activities []string
	for _, p := range seen {
		assert.Equal(t, "writer", p.Node)
		assert.Equal(t, 3, p.Visit)
		assert.LessOrEqual(t, len(p.Activity), agent.MaxProgressActivity)
		assert.LessOrEqual(t, len(p.Text), agent.MaxProgressText)
		if len(activities) == 0 || activities[len(activities)-1] != p.Activity {
			activities = append(activities, p.Activity)
		}
	}
	t.Logf("activities: %q", activities)
	assert.Contains(t, activities, "Write new.txt")
	assert.Contains(t, activities, "Edit old.txt")
	last := seen[len(seen)-1]
	assert.GreaterOrEqual(t, last.ToolCalls, 2)
	assert.Equal(t, excerpt.Tail(res.Text, agent.MaxProgressText), last.Text, "the reply so far is the final reply's tail")
	assert.Equal(t, res.Usage.Tokens(), last.Usage.Tokens(), "the tokens so far end at the visit's")
}

// fingerprint checks what a visit's fingerprint covers: the model and
// every setting the backend honours, each level its own, and not the
// endpoint, the key, the timeout or where scratch files go.
func fingerprint(t *testing.T, s Suite) {
	f := s.facts(t)
	a := s.Backend(cliexec.Options{Model: "m1", BaseURL: "http://a/v1"})
	b := s.Backend(cliexec.Options{Model: "m1", BaseURL: "http://elsewhere/v1", APIKey: "other", Timeout: time.Hour, TempDir: t.TempDir()})
	assert.Equal(t, a.Fingerprint(agent.Request{}), b.Fingerprint(agent.Request{}), "endpoint, key, timeout and scratch are not part of it")
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	settings := map[string]agent.Settings{}
	honours := func(s string) bool { return slices.Contains(f.Honours, s) }
	if honours(agent.SettingPermissions) {
		for _, level := range catalogue.Permissions() {
			settings[level] = agent.Settings{Permissions: level}
		}
	}
	if honours(agent.SettingTools) {
		settings["tools"] = agent.Settings{Tools: []string{"read"}}
	}
	if honours(agent.SettingDisallowedTools) {
		settings["disallowed_tools"] = agent.Settings{DisallowedTools: []string{"bash"}}
	}
	if honours(agent.SettingSystemPrompt) {
		settings["system_prompt"] = agent.Settings{SystemPrompt: "be brief"}
	}
	if honours(agent.SettingAppendSystemPrompt) {
		settings["append_system_prompt"] = agent.Settings{AppendSystemPrompt: "and kind"}
	}
	DistinctFingerprints(t, a, settings)
}

// planted checks that what an agent plants where the worker reads is
// refused with the typed error, the visit failing and the worker going
// on: the agent, through the real CLI's own shell tool, links its
// ask_user record to /dev/zero; and a session file an earlier visit's
// agent replaced with a link to /dev/zero or a FIFO is refused on the
// resume, before the CLI starts, without a read or a wait.
func planted(t *testing.T, s Suite) {
	ctx := context.Background()
	h := s.harness(t)
	b := s.New(h)
	f := s.facts(t)
	req := agent.Request{Env: NewEnv(t),
		Prompt: fmt.Sprintf(`%s for d in %s/tether-visit-*; do ln -s /dev/zero "$d/ask-user.json"; done`, fakemodel.CueShell, h.Scratch)}
	if slices.Contains(f.Honours, agent.SettingPermissions) {
		req.Settings.Permissions = agent.PermissionFull
	}
	_, err := b.Execute(ctx, req)
	require.ErrorIs(t, err, agent.ErrUnsafeFile, "the ask_user record the agent linked to /dev/zero")
	assert.Equal(t, "UnsafeFile", agent.ErrorType(err))
	ran := false
	for _, r := range h.Fake.Requests() {
		ran = ran || r.ToolResult != ""
	}
	require.True(t, ran, "the agent's shell command ran")
	if !f.Persist {
		return
	}
	env := NewEnv(t)
	res := execute(t, b, agent.Request{Prompt: "alpha", Env: env})
	file, err := b.Packer(env).(interface {
		SessionFile(context.Context, string) (string, error)
	}).SessionFile(ctx, res.SessionID)
	require.NoError(t, err)
	for name, plant := range map[string]func(string) error{
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"fifo":              func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		require.NoError(t, os.Remove(file))
		require.NoError(t, plant(file), name)
		before := len(h.Fake.Requests())
		_, err := b.Execute(ctx, agent.Request{Prompt: "beta", SessionID: res.SessionID, Env: env})
		require.ErrorIs(t, err, agent.ErrUnsafeFile, "a session file swapped for a %s", name)
		assert.Len(t, h.Fake.Requests(), before, "refused before the CLI starts")
	}
}

// transcriptOf runs three visits of one session through the real CLI (a
// file written, a shell command run on the first resume, a plain turn on
// the second), packs it as the worker does (whole, then a delta), stores
// it, and reads it back as the console does (conversation.Read): every
// prompt as a user entry of its turn, the model's replies, each tool call
// with its arguments and its result.
func transcriptOf(t *testing.T, s Suite) {
	ctx := context.Background()
	f := s.facts(t)
	h := s.harness(t)
	b := s.New(h)
	env := NewEnv(t)
	var settings agent.Settings
	if slices.Contains(f.Honours, agent.SettingPermissions) {
		settings.Permissions = agent.PermissionFull
	}
	prompts := []string{
		"write the notes\nWRITE_FILE: notes.txt\nfirst line\nEND_FILE",
		"now list them\n" + fakemodel.CueShell + " ls notes.txt",
		"and that is all",
	}
	first := execute(t, b, agent.Request{Prompt: prompts[0], Env: env, Settings: settings})
	pk := b.Packer(env).(interface {
		PackDelta(context.Context, string, *packer.Manifest) ([]byte, *packer.Manifest, error)
	})
	base, m, err := pk.PackDelta(ctx, first.SessionID, nil)
	require.NoError(t, err)
	for _, p := range prompts[1:] {
		execute(t, b, agent.Request{Prompt: p, SessionID: first.SessionID, Env: env, Settings: settings})
	}
	delta, _, err := pk.PackDelta(ctx, first.SessionID, m)
	require.NoError(t, err)

	store := blob.NewMem()
	const run = "transcript-run"
	slot := runstore.NodeSessionSlot{Backend: f.Name, SessionID: first.SessionID}
	for i, data := range [][]byte{base, delta} {
		ref := runstore.SessionKey(run, "writer", fmt.Sprintf("01J0000000000000000000000%d", i))
		require.NoError(t, blob.PutBytes(ctx, store, ref, data))
		if i == 0 {
			slot.StateRef, slot.Digest = ref, packer.Digest(data)
		} else {
			slot.Parts = append(slot.Parts, runstore.SessionPart{Ref: ref, Digest: packer.Digest(data), Size: int64(len(data))})
		}
	}
	page, err := conversation.Read(ctx, transcripts.Reader, conversation.FromSlot(store, run, slot), 0, 0, transcript.Limits{})
	require.NoError(t, err)
	require.Zero(t, page.Next)

	var users []string
	calls := map[string]transcript.Entry{}
	results := map[string]transcript.Entry{}
	replies := map[int]string{}
	for _, e := range page.Entries {
		switch e.Kind {
		case transcript.User:
			users = append(users, e.Text)
			assert.Equal(t, len(users), e.Turn, "each prompt opens its turn")
		case transcript.Assistant:
			replies[e.Turn] += e.Text
		case transcript.ToolCall:
			calls[e.CallID] = e
		case transcript.ToolResult:
			results[e.CallID] = e
		}
	}
	assert.Equal(t, prompts, users, "the prompts, once each, in order")
	for turn := 1; turn <= 3; turn++ {
		assert.Contains(t, replies[turn], fmt.Sprintf("turn %d: ", turn), "the reply of turn %d", turn)
	}
	wrote, listed := false, false
	for id, c := range calls {
		r, ok := results[id]
		assert.True(t, ok, "the call %s (%s) has its result", id, c.Tool)
		switch {
		case c.Turn == 1 && strings.Contains(c.Input, "notes.txt") && strings.Contains(c.Input, "first line"):
			wrote = true
		case c.Turn == 2 && strings.Contains(c.Input, "ls notes.txt"):
			listed = ok && strings.Contains(r.Text, "notes.txt") && !r.IsError
		}
	}
	assert.True(t, wrote, "turn 1 wrote notes.txt with its content: %+v", calls)
	assert.True(t, listed, "turn 2 ran ls and saw its output: %+v %+v", calls, results)
}
