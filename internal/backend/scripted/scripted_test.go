package scripted

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

var ctx = context.Background()

func env(t *testing.T) agent.Env {
	return agent.Env{StateRoot: t.TempDir(), Workdir: "/work/project"}
}

func run(t *testing.T, b *Backend, req agent.Request) agent.Result {
	t.Helper()
	res, err := b.Execute(ctx, req)
	require.NoError(t, err)
	return res
}

func loadLog(t *testing.T, root, id string) *sessionlog.Log {
	t.Helper()
	c := jsonl.Open(SessionsDir(root))
	defer c.Close()
	log, err := c.Load(ctx, id)
	require.NoError(t, err)
	return log
}

// copyTree copies every regular file under src to dst, file by file, the
// way an operator or a sync tool would.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	}))
}

func TestFreshVisitCreatesASession(t *testing.T) {
	b := New(Options{})
	assert.Equal(t, "scripted", b.Name())
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "hello", Model: "m1", Env: e})
	assert.True(t, strings.HasPrefix(res.SessionID, IDPrefix), res.SessionID)
	assert.Equal(t, "turn 1: hello", res.Text)
	assert.Equal(t, Fingerprint("m1", nil, agent.Settings{}), res.Fingerprint)
	assert.Nil(t, res.NeedsInteraction)

	path := filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, res.SessionID))
	fi, err := os.Stat(path)
	require.NoError(t, err, "the session lives at the documented path")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	log := loadLog(t, e.StateRoot, res.SessionID)
	assert.Equal(t, Name, log.Header.Backend)
	assert.Equal(t, e.Workdir, log.Header.Cwd)
	var kinds []sessionlog.Kind
	for _, ev := range log.Events {
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindMessage, sessionlog.KindMessage, sessionlog.KindTurnEnd}, kinds)

	other := run(t, b, agent.Request{Prompt: "hello", Env: e})
	assert.NotEqual(t, res.SessionID, other.SessionID, "every fresh visit is a new session")
}

// The acceptance test: a session created in one state root, copied
// file by file to an empty root and resumed there, continues at turn 2.
func TestSessionCopiedFileByFileResumesAtTurn2(t *testing.T) {
	b := New(Options{})
	script := []string{"turn {{.Turn}} saw {{len .History}} earlier turns{{range .History}} [{{.Number}}: {{.Prompt}} -> {{.Reply}}]{{end}}"}
	a := agent.Env{StateRoot: t.TempDir(), Workdir: "/machine-a/work"}
	first := run(t, b, agent.Request{Prompt: "start", Script: script, Env: a})
	assert.Equal(t, "turn 1 saw 0 earlier turns", first.Text)

	rootB := filepath.Join(t.TempDir(), "empty-root")
	copyTree(t, a.StateRoot, rootB)
	bEnv := agent.Env{StateRoot: rootB, Workdir: "/machine-b/elsewhere"}
	require.True(t, b.Packer(bEnv).HasSession(ctx, first.SessionID))

	second := run(t, b, agent.Request{Prompt: "again", SessionID: first.SessionID, Script: script, Env: bEnv})
	assert.Equal(t, first.SessionID, second.SessionID)
	assert.Equal(t, "turn 2 saw 1 earlier turns [1: start -> turn 1 saw 0 earlier turns]", second.Text)
	assert.Equal(t, first.Fingerprint, second.Fingerprint)

	third := run(t, b, agent.Request{Prompt: "more", SessionID: first.SessionID, Script: script, Env: bEnv})
	assert.True(t, strings.HasPrefix(third.Text, "turn 3 saw 2 earlier turns"), third.Text)
	// The original root did not move on.
	assert.Len(t, history(loadLog(t, a.StateRoot, first.SessionID).Events), 1)
}

func TestScriptEntriesFollowTheSessionTurn(t *testing.T) {
	b := New(Options{})
	e := env(t)
	script := []string{"a{{.Turn}} v{{.Visit}}", "b{{.Turn}} v{{.Visit}}"}
	r := run(t, b, agent.Request{Prompt: "p", Visit: 4, Script: script, Env: e})
	assert.Equal(t, "a1 v4", r.Text)
	r = run(t, b, agent.Request{Prompt: "p", Visit: 5, SessionID: r.SessionID, Script: script, Env: e})
	assert.Equal(t, "b2 v5", r.Text)
	r = run(t, b, agent.Request{Prompt: "p", Visit: 6, SessionID: r.SessionID, Script: script, Env: e})
	assert.Equal(t, "b3 v6", r.Text, "the last entry repeats")
	r = run(t, b, agent.Request{Prompt: "{{not a template}}", SessionID: r.SessionID, Env: e})
	assert.Equal(t, "turn 4: {{not a template}}", r.Text, "prompts are data, never templates")
}

func TestResumeMissingSessionIsTypedNoSession(t *testing.T) {
	b := New(Options{})
	e := env(t)
	for _, id := range []string{"sc-01HZZZZZZZZZZZZZZZZZZZZZZZ", "../../etc/passwd", ""} {
		if id == "" {
			continue
		}
		_, err := b.Execute(ctx, agent.Request{Prompt: "p", SessionID: id, Env: e})
		require.ErrorIs(t, err, agent.ErrNoSession, id)
		assert.Equal(t, "NoSession", agent.ErrorType(err))
		assert.Contains(t, err.Error(), "no such session "+id)
		_, err = b.Execute(ctx, agent.Request{Prompt: "p", SessionID: id, Fork: true, Env: e})
		require.ErrorIs(t, err, agent.ErrNoSession, "fork of "+id)
	}
	entries, err := os.ReadDir(e.StateRoot)
	require.NoError(t, err)
	assert.Empty(t, entries, "a failed resume never creates a session")
}

func TestResumeAFaultIsNotNoSession(t *testing.T) {
	b := New(Options{Logger: slog.New(slog.DiscardHandler)})
	e := env(t)
	// A file where the sessions directory should be: ENOTDIR, not absence.
	require.NoError(t, os.WriteFile(SessionsDir(e.StateRoot), nil, 0o600))
	_, err := b.Execute(ctx, agent.Request{Prompt: "p", SessionID: "sc-x", Env: e})
	require.Error(t, err)
	require.NotErrorIs(t, err, agent.ErrNoSession)
	assert.False(t, b.Packer(e).HasSession(ctx, "sc-x"))
}

func TestForkCopiesUnderANewIDWithLineage(t *testing.T) {
	b := New(Options{})
	e := env(t)
	script := []string{"turn {{.Turn}} in {{.SessionID}}"}
	src := run(t, b, agent.Request{Prompt: "one", Script: script, Env: e})
	fork := run(t, b, agent.Request{Prompt: "two", SessionID: src.SessionID, Fork: true, Script: script, Env: e})
	require.NotEqual(t, src.SessionID, fork.SessionID)
	assert.Equal(t, "turn 2 in "+fork.SessionID, fork.Text)

	flog := loadLog(t, e.StateRoot, fork.SessionID)
	require.NotNil(t, flog.Header.ForkedFrom)
	assert.Equal(t, sessionlog.Lineage{SessionID: src.SessionID, Seq: 4}, *flog.Header.ForkedFrom)
	assert.Len(t, history(flog.Events), 2)
	assert.Len(t, history(loadLog(t, e.StateRoot, src.SessionID).Events), 1, "the source is untouched")

	again := run(t, b, agent.Request{Prompt: "three", SessionID: src.SessionID, Script: script, Env: e})
	assert.Equal(t, "turn 2 in "+src.SessionID, again.Text, "the source continues on its own")
}

func TestAskThenAnswerResumesOnAnotherRoot(t *testing.T) {
	b := New(Options{})
	a := env(t)
	script := []string{"Thinking.\nASK: which colour?\nASK: how many?", "turn {{.Turn}}: you said {{.Prompt}}"}
	asked := run(t, b, agent.Request{Prompt: "paint it", Script: script, Env: a})
	require.NotNil(t, asked.NeedsInteraction)
	assert.Equal(t, []agent.Question{{ID: "q1", Text: "which colour?"}, {ID: "q2", Text: "how many?"}}, asked.NeedsInteraction.Questions)
	assert.Equal(t, "ask-1", asked.NeedsInteraction.PendingToolUseID)
	assert.True(t, b.Packer(a).HasSession(ctx, asked.SessionID), "the asking session stays on disk")

	// Pause: pack, move to a fresh worker, unpack, answer.
	blob, err := b.Packer(a).PackSession(ctx, asked.SessionID)
	require.NoError(t, err)
	other := agent.Env{StateRoot: t.TempDir(), Workdir: "/w2"}
	require.NoError(t, b.Packer(other).UnpackSession(ctx, asked.SessionID, blob))

	_, err = b.Execute(ctx, agent.Request{SessionID: asked.SessionID, Script: script, Env: other,
		Answer: &agent.Answer{QuestionID: "q1", Text: "blue", PendingToolUseID: "ask-7"}})
	require.ErrorContains(t, err, "waits for an answer to ask-1")
	_, err = b.Execute(ctx, agent.Request{SessionID: asked.SessionID, Script: script, Env: other,
		Answer: &agent.Answer{QuestionID: "q9", Text: "blue"}})
	require.ErrorContains(t, err, "not q9")

	answered := run(t, b, agent.Request{SessionID: asked.SessionID, Script: script, Env: other,
		Answer: &agent.Answer{QuestionID: "q1", Text: "blue", PendingToolUseID: "ask-1"}})
	assert.Equal(t, "turn 2: you said blue", answered.Text)
	assert.Nil(t, answered.NeedsInteraction)

	log := loadLog(t, other.StateRoot, asked.SessionID)
	turns := history(log.Events)
	require.Len(t, turns, 2)
	assert.Equal(t, sessionlog.ReasonAwaitingInput, turns[0].End)
	assert.Equal(t, "blue", turns[1].Prompt)
	var result *sessionlog.Event
	for i := range log.Events {
		if log.Events[i].Kind == sessionlog.KindToolResult {
			result = &log.Events[i]
		}
	}
	require.NotNil(t, result, "the answer is the ask_user tool result")
	assert.Equal(t, "ask-1", result.ToolUseID)

	_, err = b.Execute(ctx, agent.Request{SessionID: asked.SessionID, Script: script, Env: other,
		Answer: &agent.Answer{Text: "again"}})
	require.ErrorContains(t, err, "not waiting for an answer")
}

func TestFailCue(t *testing.T) {
	b := New(Options{})
	e := env(t)
	script := []string{"  FAIL: broken at {{.Turn}}", "recovered at {{.Turn}} after {{(index .History 0).End}}"}
	res, err := b.Execute(ctx, agent.Request{Prompt: "p", Script: script, Env: e})
	require.ErrorIs(t, err, agent.ErrScript)
	assert.Equal(t, "ScriptedFailure", agent.ErrorType(err))
	assert.Contains(t, err.Error(), "broken at 1")
	require.NotEmpty(t, res.SessionID, "the failed session is still reported")
	next := run(t, b, agent.Request{Prompt: "p", SessionID: res.SessionID, Script: script, Env: e})
	assert.Equal(t, "recovered at 2 after failed", next.Text)
}

func TestJSONCue(t *testing.T) {
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "p", Script: []string{`JSON: {"ok": true, "turn": {{.Turn}}, "prompt": {{printf "%q" .Prompt}}}`}, Env: e})
	assert.Equal(t, map[string]any{"ok": true, "turn": float64(1), "prompt": "p"}, res.Structured)
	assert.Equal(t, `{"ok": true, "turn": 1, "prompt": "p"}`, res.Text)

	_, err := b.Execute(ctx, agent.Request{Prompt: "p", Script: []string{"JSON: [1,2]"}, Env: e})
	require.ErrorIs(t, err, agent.ErrScript)
	_, err = b.Execute(ctx, agent.Request{Prompt: "p", Script: []string{"JSON: {nope"}, Env: e})
	require.ErrorIs(t, err, agent.ErrScript)
}

func TestBrokenTemplateIsAScriptFailure(t *testing.T) {
	b := New(Options{})
	e := env(t)
	for _, src := range []string{"{{.Nope}}", "{{if}}", "{{index .History 5}}"} {
		_, err := b.Execute(ctx, agent.Request{Prompt: "p", Script: []string{src}, Env: e})
		require.ErrorIs(t, err, agent.ErrScript, src)
	}
}

// A crash in the middle of a turn leaves it open; the session log's repair
// closes it as interrupted and the agent carries on after it.
func TestCrashMidTurnIsClosedAsInterrupted(t *testing.T) {
	b := New(Options{})
	e := env(t)
	script := []string{"turn {{.Turn}} after:{{range .History}} {{.Number}}={{.End}}{{end}}"}
	first := run(t, b, agent.Request{Prompt: "p", Script: script, Env: e})

	// What a worker killed between the opening and the reply leaves behind.
	c := jsonl.Open(SessionsDir(e.StateRoot))
	require.NoError(t, c.Append(ctx, first.SessionID, sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "lost work")))
	require.NoError(t, c.Close())

	next := run(t, b, agent.Request{Prompt: "p", SessionID: first.SessionID, Script: script, Env: e})
	assert.Equal(t, "turn 3 after: 1=completed 2=interrupted", next.Text)
	turns := history(loadLog(t, e.StateRoot, first.SessionID).Events)
	assert.Equal(t, "lost work", turns[1].Prompt, "the interrupted turn's work is kept")
}

func TestRequestValidation(t *testing.T) {
	b := New(Options{})
	_, err := b.Execute(ctx, agent.Request{Prompt: "p"})
	require.ErrorContains(t, err, "no state root")
	_, err = b.Execute(ctx, agent.Request{Env: env(t), Answer: &agent.Answer{Text: "x"}})
	require.ErrorContains(t, err, "needs the session")
	_, err = b.Execute(ctx, agent.Request{Env: env(t), Fork: true})
	require.ErrorContains(t, err, "fork needs")
}

func TestFingerprint(t *testing.T) {
	none := agent.Settings{}
	f := Fingerprint("m", []string{"a", "b"}, none)
	assert.Len(t, f, 32)
	assert.Equal(t, f, Fingerprint("m", []string{"a", "b"}, none))
	assert.Equal(t, f, Fingerprint("m", []string{"a", "b"}, agent.Settings{Env: []string{"X"}, Timeout: time.Minute}),
		"env names and timeouts are not part of it")
	for _, other := range []string{
		Fingerprint("m2", []string{"a", "b"}, none),
		Fingerprint("m", []string{"a"}, none),
		Fingerprint("m", []string{"ab"}, none),
		Fingerprint("m", []string{"a", "b", ""}, none),
		Fingerprint("", []string{"ma", "b"}, none),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{Permissions: agent.PermissionEdit}),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{Tools: []string{"Read"}}),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{DisallowedTools: []string{"Read"}}),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{SystemPrompt: "s"}),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{AppendSystemPrompt: "s"}),
		Fingerprint("m", []string{"a", "b"}, agent.Settings{Tools: []string{}}),
	} {
		assert.NotEqual(t, f, other)
	}
	assert.Equal(t, Fingerprint("m", nil, agent.Settings{Tools: []string{"b", "a"}}),
		Fingerprint("m", nil, agent.Settings{Tools: []string{"a", "b", "a"}}), "tool order does not matter")
	assert.Equal(t, "53b4335c7f98dd1fddbf4a37a8ce5727", Fingerprint("", nil, none), "the definition of the fingerprint is stable")
}

func TestFingerprintMethodIsWhatExecuteReports(t *testing.T) {
	b := New(Options{})
	req := agent.Request{Prompt: "hi", Model: "m", Script: []string{"x"}, Env: env(t),
		Settings: agent.Settings{Permissions: agent.PermissionReadOnly, Tools: []string{"Read"}}}
	res, err := b.Execute(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, b.Fingerprint(req), res.Fingerprint)
	assert.NotEqual(t, b.Fingerprint(agent.Request{Model: "m", Script: []string{"x"}}), res.Fingerprint)
}

func TestNoSessionErrorWording(t *testing.T) {
	_, err := New(Options{}).Execute(ctx, agent.Request{SessionID: "sc-gone", Env: env(t)})
	assert.True(t, errors.Is(err, agent.ErrNoSession))
	assert.True(t, strings.HasPrefix(err.Error(), "backend: no such session sc-gone under "), err.Error())
}

// The scripted agent counts a token per word, prompt in and reply out, at a
// known cost of nothing, also on the turn that asks, and reports it as the
// visit's progress too.
func TestUsageCountsWords(t *testing.T) {
	b := New(Options{})
	e := env(t)
	var got []agent.Progress
	res := run(t, b, agent.Request{Prompt: "write the tests", NodeID: "writer", Visit: 2, Env: e,
		Progress: func(p agent.Progress) { got = append(got, p) }})
	assert.Equal(t, "turn 1: write the tests", res.Text)
	assert.Equal(t, agent.Usage{InputTokens: 3, OutputTokens: 5, CostKnown: true}, res.Usage)
	require.Len(t, got, 1)
	assert.Equal(t, agent.Progress{Node: "writer", Visit: 2, Backend: Name, Text: res.Text, Usage: res.Usage}, got[0])

	asked := run(t, b, agent.Request{Prompt: "go", Script: []string{"ASK: which file?"}, Env: e})
	require.NotNil(t, asked.NeedsInteraction)
	assert.Equal(t, agent.Usage{InputTokens: 1, OutputTokens: 3, CostKnown: true}, asked.Usage)
}

// A resume reads the last turn only, and the turns still count on: the
// count comes from the number each turn/start carries, not from how many
// turns were read. A line damaged early in the log proves the resume did
// not read it.
func TestResumeReadsOnlyTheLastTurn(t *testing.T) {
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "go", Script: []string{"turn {{.Turn}}"}, Env: e})
	id := res.SessionID
	for range 4 {
		res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	}
	assert.Equal(t, "turn 5", res.Text)

	path := filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, id))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Contains(t, lines[2], `"role":"user"`)
	lines[2] = strings.Replace(lines[2], `"role"`, `"ro\xffle"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))

	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 6", res.Text)

	// A template that reads the history reads the whole log, and so meets
	// the damage.
	_, err = b.Execute(ctx, agent.Request{Prompt: "go", SessionID: id, Script: []string{"{{len .History}}"}, Env: e})
	require.Error(t, err)
}

// A log written before turn/starts carried their number is counted whole.
func TestResumeCountsAnUnnumberedLog(t *testing.T) {
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "go", Env: e})
	id := res.SessionID
	run(t, b, agent.Request{Prompt: "go", SessionID: id, Env: e})

	path := filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, id))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	old := strings.ReplaceAll(string(data), `,"meta":{"turn":1}`, "")
	old = strings.ReplaceAll(old, `,"meta":{"turn":2}`, "")
	require.NotEqual(t, string(data), old)
	require.NotContains(t, old, `"meta"`)
	require.NoError(t, os.WriteFile(path, []byte(old), 0o600))

	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 3", res.Text)
	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}} of {{len .History}} before"}, Env: e})
	assert.Equal(t, "turn 4 of 3 before", res.Text)
	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 5", res.Text)
}
