package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// brokenStore answers every read and write with a fault that is not
// absence.
type brokenStore struct{ blob.Store }

var errFault = errors.New("disk on fire")

func (brokenStore) Get(context.Context, string) (io.ReadCloser, error) { return nil, errFault }
func (brokenStore) Put(context.Context, string, io.Reader, int64, ...blob.PutOption) error {
	return errFault
}

func newActs(t *testing.T, store blob.Store) *Activities {
	t.Helper()
	dir := t.TempDir()
	return &Activities{
		Blobs: store, Runs: runstore.New(store),
		Backends: Backends{scripted.New(scripted.Options{})},
		StateDir: dir + "/state", WorkDir: dir + "/work", Queue: "tether/test",
	}
}

var writer = graph.Node{ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist, Prompt: "hello {{.visit}}"}

func appType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestExecutePacksAndStamps(t *testing.T) {
	a := newActs(t, blob.NewMem())
	key := runstore.SessionKey("r1", "writer", "01J00000000000000000000000")
	res, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted", PackTo: key})
	require.NoError(t, err)
	assert.True(t, res.Packed, res.PackError)
	assert.NotEmpty(t, res.PackDigest)
	assert.Equal(t, res.SessionID, res.Output[agent.SessionIDKey])
	assert.Equal(t, "scripted", res.Output[agent.BackendKey])
	assert.Equal(t, res.Fingerprint, res.Output[agent.SessionFingerprintKey])
	assert.NotContains(t, res.Output, agent.SessionStateBlobKey)
	assert.Equal(t, "tether/test", res.Queue)
	_, err = a.Blobs.Stat(context.Background(), key)
	require.NoError(t, err)

	// A retry of the same visit re-puts identical bytes under the same key.
	_, err = a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted", SessionID: res.SessionID, PackTo: runstore.SessionKey("r1", "writer", "01J00000000000000000000001")})
	require.NoError(t, err)
}

// A failed Put is reported, not raised: the agent already ran, and a retry
// would run it twice.
func TestExecuteReportsPackFailure(t *testing.T) {
	a := newActs(t, brokenStore{blob.NewMem()})
	res, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted", PackTo: runstore.SessionKey("r1", "writer", "01J00000000000000000000000")})
	require.NoError(t, err)
	assert.False(t, res.Packed)
	assert.Contains(t, res.PackError, "disk on fire")
}

func TestExecuteMissingSessionIsTyped(t *testing.T) {
	a := newActs(t, blob.NewMem())
	_, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 2, Node: writer, Backend: "scripted", SessionID: "sc-01J00000000000000000000000"})
	assert.Equal(t, "NoSession", appType(err))
}

func TestExecuteFallsBackWhenBackendMissing(t *testing.T) {
	a := newActs(t, blob.NewMem())
	n := writer
	n.Backend, n.Fallback = "pi", []string{"scripted"}
	res, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: n, Backend: "pi", SessionID: "pi-session"})
	require.NoError(t, err)
	assert.Equal(t, "scripted", res.Backend, "the effective backend is the one that ran")
	assert.NotEqual(t, "pi-session", res.SessionID, "a session id never moves to another backend")

	n.Fallback = nil
	_, err = a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: n, Backend: "pi"})
	assert.Equal(t, "NotInstalled", appType(err))
}

func TestRestoreDistinguishesAbsenceFromFaults(t *testing.T) {
	ctx := context.Background()
	a := newActs(t, blob.NewMem())
	ref := runstore.SessionKey("r1", "writer", "01J00000000000000000000000")
	req := &RestoreRequest{RunID: "r1", Node: writer, Backend: "scripted", SessionID: "sc-x", StateRef: ref}

	_, err := a.RestoreSession(ctx, req)
	assert.Equal(t, ErrTypeSessionUnavailable, appType(err), "a missing blob strips and runs fresh")

	require.NoError(t, blob.PutBytes(ctx, a.Blobs, ref, []byte("garbage")))
	_, err = a.RestoreSession(ctx, req)
	assert.Equal(t, ErrTypeSessionUnavailable, appType(err), "a corrupt blob strips and runs fresh")

	broken := newActs(t, brokenStore{blob.NewMem()})
	_, err = broken.RestoreSession(ctx, req)
	require.Error(t, err)
	assert.Empty(t, appType(err), "a store fault is retried, never absence")
	assert.ErrorIs(t, err, errFault)

	// Has-session answers for the live root only.
	res, err := a.RestoreSession(ctx, &RestoreRequest{RunID: "r1", Node: writer, Backend: "scripted", SessionID: "sc-nope"})
	require.NoError(t, err)
	assert.False(t, res.Present)
	assert.Equal(t, "tether/test", res.Queue)
}

func TestRestoreRoundTripsAPackedSession(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	a := newActs(t, store)
	key := runstore.SessionKey("r1", "writer", "01J00000000000000000000000")
	res, err := a.ExecuteNode(ctx, &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted", PackTo: key})
	require.NoError(t, err)
	require.True(t, res.Packed)

	// Another worker, with an empty root.
	b := newActs(t, store)
	rr, err := b.RestoreSession(ctx, &RestoreRequest{RunID: "r1", Node: writer, Backend: "scripted", SessionID: res.SessionID, StateRef: key})
	require.NoError(t, err)
	assert.True(t, rr.Present)
	res2, err := b.ExecuteNode(ctx, &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 2, Node: writer, Backend: "scripted", SessionID: res.SessionID})
	require.NoError(t, err)
	assert.Equal(t, res.SessionID, res2.SessionID)
}

func TestRunTool(t *testing.T) {
	a := newActs(t, blob.NewMem())
	tool := graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"sh", "-c", "echo {{.input.word}}; echo oops >&2; exit 4"}}
	out, err := a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool, Input: map[string]any{"word": "otter"}})
	require.NoError(t, err)
	assert.Equal(t, 4, out["exit_code"])
	assert.Equal(t, "otter\n", out["stdout"])
	assert.Equal(t, "oops\n", out["stderr"])
	assert.Equal(t, false, out["timed_out"])

	tool.Run = []string{"sh", "-c", "sleep 30 & sleep 30"}
	tool.Timeout = graph.Duration(200_000_000)
	out, err = a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool})
	require.NoError(t, err)
	assert.Equal(t, true, out["timed_out"])
	assert.Equal(t, -1, out["exit_code"])

	tool.Run = []string{"definitely-not-a-program-here"}
	_, err = a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool})
	assert.Equal(t, ErrTypeBadRequest, appType(err))
}

// A tool's output keeps the last 4096 bytes of stdout and stderr as they
// were written, and a relative program is the run's own.
func TestRunToolTailsAndRelativeProgram(t *testing.T) {
	a := newActs(t, blob.NewMem())
	env, err := a.liveEnv("tool", "r1", graph.Node{ID: "t"})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(env.Workdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(env.Workdir, "check.sh"), []byte("#!/bin/sh\nhead -c 10000 /dev/zero | tr '\\0' x; echo END; printf 'no newline' >&2\n"), 0o755))
	tool := graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"./check.sh"}}
	out, err := a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool})
	require.NoError(t, err)
	assert.Equal(t, 0, out["exit_code"])
	assert.Equal(t, strings.Repeat("x", 4092)+"END\n", out["stdout"])
	assert.Equal(t, "no newline", out["stderr"])
}

func TestEnvRefusesEscapingWorkdir(t *testing.T) {
	a := newActs(t, blob.NewMem())
	_, err := a.liveEnv("scripted", "r1", graph.Node{ID: "n", Workdir: "../../etc"})
	require.Error(t, err)
	env, err := a.liveEnv("scripted", "r1", graph.Node{ID: "n", Workdir: "sub/dir"})
	require.NoError(t, err)
	assert.Contains(t, env.Workdir, "/work/r1/sub/dir")
}

// A reply too large for an activity result is cut in the output, never
// failed (a failed completion would run the agent again).
func TestExecuteCutsHugeReplies(t *testing.T) {
	a := newActs(t, blob.NewMem())
	n := writer
	n.Prompt = "{{.input.big}}"
	n.Script = []string{"{{.Prompt}}"}
	big := strings.Repeat("é", MaxOutputText) // 2 bytes each: twice the cap
	res, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: n, Backend: "scripted", Input: map[string]any{"big": big}})
	require.NoError(t, err)
	text := res.Output["text"].(string)
	assert.Less(t, len(text), MaxOutputText+200)
	assert.True(t, utf8.ValidString(text))
	assert.Contains(t, text, "more bytes cut")
	assert.Equal(t, true, res.Output["text_truncated"])

	res, err = a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: n, Backend: "scripted", Input: map[string]any{"big": "small"}})
	require.NoError(t, err)
	assert.Equal(t, "small", res.Output["text"])
	assert.NotContains(t, res.Output, "text_truncated")
}

// countingStore counts the reads of session blobs.
type countingStore struct {
	blob.Store
	gets int
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if strings.Contains(key, "/sessions/") {
		c.gets++
	}
	return c.Store.Get(ctx, key)
}

// A worker that packed a slot and still holds its session untouched skips
// the restore of that very blob; once the session file is gone or changed,
// the blob is read and unpacked again.
func TestLiveSessionSkipsItsOwnRestoreOnlyWhileUntouched(t *testing.T) {
	store := &countingStore{Store: blob.NewMem()}
	a := newActs(t, store)
	visit := func(n int, plan *SessionPlan) *VisitResult {
		t.Helper()
		res, err := a.Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: n, Node: writer, Backend: "scripted", Session: plan,
			PackTo: runstore.SessionKey("r1", "writer", fmt.Sprintf("01J%023d", n)), Started: time.Unix(1_800_000_000, 0),
		})
		require.NoError(t, err)
		require.Empty(t, res.SessionNote)
		return res
	}
	plan := func(r *VisitResult) *SessionPlan {
		return &SessionPlan{Kind: "unpack_own_slot", SessionID: r.SessionID, StateRef: r.PackedTo, Digest: r.PackDigest}
	}
	r1 := visit(1, nil)
	r2 := visit(2, plan(r1))
	assert.Equal(t, 0, store.gets, "the worker holds the session it packed")
	assert.Equal(t, r1.SessionID, r2.SessionID)

	// Something removes the live session: the restore reads the blob.
	require.NoError(t, os.RemoveAll(filepath.Join(a.StateDir, "runs")))
	r3 := visit(3, plan(r2))
	assert.Equal(t, 1, store.gets)
	assert.Equal(t, r1.SessionID, r3.SessionID)
	assert.Contains(t, r3.Output["text"], "3")
}

// A node whose CLI is not installed on the worker runs on its fallback,
// and a session planned for the first backend is stripped, not carried
// over to another CLI.
func TestFallbackRunsWhenTheCLIIsMissing(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Backends = append(a.Backends, claude.New(claude.Options{Options: cliexec.Options{BinDir: t.TempDir()}}))
	var _ Availability = claude.New(claude.Options{})
	node := graph.Node{ID: "writer", Kind: graph.KindAgent, Backend: "claude_code", Fallback: []string{"scripted"}, Session: graph.SessionPersist, Prompt: "hello"}
	res, err := a.Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 2, Node: node, Backend: "claude_code",
		Input:   map[string]any{agent.SessionIDKey: "claude-session", agent.SessionFingerprintKey: "fp"},
		Session: &SessionPlan{Kind: "unpack_own_slot", SessionID: "claude-session", StateRef: "runs/r1/sessions/writer/01J00000000000000000000000", Stripped: map[string]any{}},
		Started: time.Unix(1_800_000_000, 0),
	})
	require.NoError(t, err)
	assert.Equal(t, "scripted", res.Backend)
	assert.Equal(t, "scripted", res.Output[agent.BackendKey])
	assert.NotEqual(t, "claude-session", res.SessionID)
	assert.Contains(t, res.SessionNote, "fallback")
	assert.Contains(t, res.Output[SessionNoteKey], "fallback")
}

// A run the workspace manager evicts leaves the worker's disk: its live
// session roots go, unless a visit of it is running here.
func TestForgottenRunLeavesItsLiveSessions(t *testing.T) {
	a := &Activities{StateDir: t.TempDir()}
	root := filepath.Join(a.StateDir, "runs", "r1", "scripted")
	require.NoError(t, os.MkdirAll(root, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "s.jsonl"), []byte("{}\n"), 0o600))
	a.live.set(liveKey("scripted", agent.Env{StateRoot: root, Workdir: "/w"}, "s"), liveSession{digest: "d"})

	a.inflight.add("r1", 1)
	a.forgetRun("r1")
	require.FileExists(t, filepath.Join(root, "s.jsonl"), "a run with a visit running here is left alone")

	a.inflight.add("r1", -1)
	a.forgetRun("r1")
	require.NoDirExists(t, filepath.Join(a.StateDir, "runs", "r1"))
	require.Empty(t, a.live.get(liveKey("scripted", agent.Env{StateRoot: root, Workdir: "/w"}, "s")).digest, "the live-session shortcut forgets it")

	a.forgetRun("../../etc") // not a run id: nothing happens
}
