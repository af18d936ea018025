package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

var ctx = context.Background()

func hdr(id, cwd string) sessionlog.Header {
	return sessionlog.Header{ID: id, Cwd: cwd, Backend: "test"}
}

// writeOneTurn writes log "s" of a session in cwd under root: its header
// and one turn's start.
func writeOneTurn(t *testing.T, root, cwd string) {
	t.Helper()
	c := jsonl.Open(root)
	require.NoError(t, c.Create(ctx, hdr("s", cwd)))
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart()))
	require.NoError(t, c.Close())
}

func TestBucket(t *testing.T) {
	assert.Equal(t, jsonl.NoCwdBucket, jsonl.Bucket(""))
	b := jsonl.Bucket("/work/my repo")
	assert.True(t, strings.HasPrefix(b, "work-my-repo-"), b)
	assert.NotEqual(t, jsonl.Bucket("/a-b"), jsonl.Bucket("/a/b"), "distinct cwds never share a bucket")
	long := "/" + strings.Repeat("x", 500)
	assert.LessOrEqual(t, len(jsonl.Bucket(long)), 64+13)
	for _, cwd := range []string{"/", "/a", "C:\\Users\\x", "/ü/€", long, "-", "--a"} {
		assert.True(t, jsonl.ValidBucket(jsonl.Bucket(cwd)), "%q -> %q", cwd, jsonl.Bucket(cwd))
	}
	for _, bad := range []string{"", ".", "..", "a/b-0123456789ab", "-0123456789ab", "x-0123456789AB", "x-012", "../x-0123456789ab", "_no_cwd"} {
		assert.False(t, jsonl.ValidBucket(bad), bad)
	}
}

func TestLayoutAndModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	c := jsonl.Open(root)
	defer c.Close()
	require.NoError(t, c.Create(ctx, hdr("s1", "/w")))
	_, err := os.Stat(root)
	require.ErrorIs(t, err, os.ErrNotExist, "Create alone creates nothing")
	require.NoError(t, c.Append(ctx, "s1", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "hi")))
	require.NoError(t, c.Append(ctx, "s1", sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))

	path := filepath.Join(root, jsonl.Bucket("/w"), "s1.jsonl")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	require.Len(t, lines, 5, "header, three events, and the empty string after the final newline")
	assert.Equal(t, `{"id":"s1","cwd":"/w","backend":"test","format_version":1}`, lines[0])
	assert.Equal(t, `{"seq":1,"kind":"turn/start"}`, lines[1])
	assert.Equal(t, `{"seq":3,"kind":"turn/end","reason":{"kind":"completed"}}`, lines[3])
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file is left behind")

	rel, err := jsonl.Locate(root, "s1")
	require.NoError(t, err)
	assert.Equal(t, jsonl.RelPath("/w", "s1"), rel)
}

func TestMaterializeNeverOverwrites(t *testing.T) {
	root := t.TempDir()
	st := jsonl.NewStore(root)
	b := sessionlog.Batch{Header: hdr("s", ""), Materialize: true, Events: []sessionlog.Event{{Seq: 1, Kind: sessionlog.KindTurnStart}}}
	b.Header.FormatVersion = sessionlog.FormatVersion
	require.NoError(t, st.AppendBatch(ctx, b))
	before, err := os.ReadFile(filepath.Join(root, jsonl.NoCwdBucket, "s.jsonl"))
	require.NoError(t, err)
	b.Events[0].Kind = sessionlog.KindMessage
	require.ErrorIs(t, st.AppendBatch(ctx, b), sessionlog.ErrCollision)
	after, err := os.ReadFile(filepath.Join(root, jsonl.NoCwdBucket, "s.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// A batch cut short keeps the lines that were fully written and drops only
// the unterminated fragment.
func TestTornMultiLineBatchKeepsCompleteLines(t *testing.T) {
	root := t.TempDir()
	writeOneTurn(t, root, "/w")
	path := filepath.Join(root, jsonl.RelPath("/w", "s"))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":2,"kind":"step/start"}` + "\n" + `{"seq":3,"kind":"message","role":"assistant","text":"par`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	c2 := jsonl.Open(root)
	defer c2.Close()
	log, err := c2.Load(ctx, "s")
	require.NoError(t, err)
	var kinds []sessionlog.Kind
	for _, e := range log.Events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindStepStart, sessionlog.KindStepEnd, sessionlog.KindTurnEnd}, kinds)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "par")
	assert.True(t, strings.HasSuffix(string(data), "}\n"))
}

func TestCorruptionIsKeptByteForByte(t *testing.T) {
	root := t.TempDir()
	c := jsonl.Open(root)
	require.NoError(t, c.Create(ctx, hdr("s", "")))
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "a"), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	require.NoError(t, c.Close())
	path := filepath.Join(root, jsonl.RelPath("", "s"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	damaged := strings.Replace(string(data), `"role"`, `"ro\xffle"`, 1) + `{"seq":4,"kind":"tu`
	require.NoError(t, os.WriteFile(path, []byte(damaged), 0o600))

	c2 := jsonl.Open(root)
	defer c2.Close()
	_, err = c2.Load(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)
	assert.Contains(t, err.Error(), "line 3")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, damaged, string(after), "a corrupt log is never truncated, not even its torn tail")
}

func TestHeaderMustBeWhole(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, jsonl.NoCwdBucket)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(`{"id":"s","backend":"te`), 0o600))
	c := jsonl.Open(root)
	defer c.Close()
	_, err := c.Load(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)
	_, err = c.List(ctx)
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)
}

func TestLogInWrongBucketIsCorrupt(t *testing.T) {
	root := t.TempDir()
	writeOneTurn(t, root, "/a")
	other := filepath.Join(root, jsonl.Bucket("/b"))
	require.NoError(t, os.MkdirAll(other, 0o700))
	require.NoError(t, os.Rename(filepath.Join(root, jsonl.RelPath("/a", "s")), filepath.Join(other, "s.jsonl")))
	c2 := jsonl.Open(root)
	defer c2.Close()
	_, err := c2.Load(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)
}

func TestSameIDInTwoBucketsIsAnError(t *testing.T) {
	root := t.TempDir()
	writeOneTurn(t, root, "/a")
	st := jsonl.NewStore(root)
	b := sessionlog.Batch{Header: hdr("s", "/b"), Materialize: true, Events: []sessionlog.Event{{Seq: 1, Kind: sessionlog.KindTurnStart}}}
	b.Header.FormatVersion = sessionlog.FormatVersion
	require.NoError(t, st.AppendBatch(ctx, b))
	_, err := jsonl.Locate(root, "s")
	require.Error(t, err)
	require.NotErrorIs(t, err, sessionlog.ErrNotFound)
	assert.Contains(t, err.Error(), "more than one bucket")
}

func TestSymlinkedLogIsRefusedNotAbsent(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	require.NoError(t, os.WriteFile(target, []byte(`{"id":"s","backend":"test","format_version":1}`+"\n"), 0o600))
	dir := filepath.Join(root, jsonl.NoCwdBucket)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "s.jsonl")))
	c := jsonl.Open(root)
	defer c.Close()
	_, err := c.Has(ctx, "s")
	require.Error(t, err)
	require.NotErrorIs(t, err, sessionlog.ErrNotFound)
	// Live lookups open with O_NOFOLLOW and fail the same way.
	err = c.Create(ctx, hdr("s", ""))
	require.ErrorIs(t, err, syscall.ELOOP)
}

// A regular file where a bucket directory should be: a live lookup meets
// ENOTDIR and reports it; the any-bucket scan only considers directories.
func TestFileWhereBucketShouldBeIsENOTDIR(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, jsonl.Bucket("/w")), nil, 0o600))
	c := jsonl.Open(root)
	defer c.Close()
	err := c.Create(ctx, hdr("s", "/w"))
	require.ErrorIs(t, err, syscall.ENOTDIR)
	require.NotErrorIs(t, err, sessionlog.ErrNotFound)
}

// TestEACCESIsNotAbsence_RealPermissionDenied makes a bucket unreadable and
// looks into it as an unprivileged user (a child process dropped to uid
// 65534 when the tests run as root, since root ignores permission bits).
func TestEACCESIsNotAbsence_RealPermissionDenied(t *testing.T) {
	if contracttest.InChild() {
		checkEACCES(t, os.Getenv("JSONL_EACCES_ROOT"))
		return
	}
	root := filepath.Join(contracttest.WorldReadableTempDir(t), "sessions")
	writeOneTurn(t, root, "/w")
	require.NoError(t, os.Chmod(root, 0o755))
	bucket := filepath.Join(root, jsonl.Bucket("/w"))
	require.NoError(t, os.Chmod(bucket, 0o000))
	t.Cleanup(func() { _ = os.Chmod(bucket, 0o700) })
	if !contracttest.AsNobody(t, "JSONL_EACCES_ROOT="+root) {
		checkEACCES(t, root)
	}
}

func checkEACCES(t *testing.T, root string) {
	c := jsonl.Open(root)
	defer c.Close()
	fault := func(err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, syscall.EACCES, what)
		require.NotErrorIs(t, err, sessionlog.ErrNotFound, what)
		t.Logf("%s: %v", what, err)
	}
	_, err := c.Has(ctx, "s")
	fault(err, "Has")
	_, err = c.Load(ctx, "s")
	fault(err, "Load")
	_, err = c.List(ctx)
	fault(err, "List")
	fault(c.Create(ctx, hdr("s", "/w")), "Create in the unreadable bucket")
	fault(c.Create(ctx, hdr("other", "/x")), "Create elsewhere still probes every bucket")
	fault(c.Delete(ctx, "s"), "Delete")
}

func TestLongCwdHeader(t *testing.T) {
	root := t.TempDir()
	cwd := "/" + strings.Repeat("\u00e9/deep", 800) // a header line longer than 4 KiB
	writeOneTurn(t, root, cwd)
	c2 := jsonl.Open(root)
	defer c2.Close()
	has, err := c2.Has(ctx, "s")
	require.NoError(t, err)
	assert.True(t, has)
	list, err := c2.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, cwd, list[0].Cwd)
}

// A tail read decodes the last turn only: damage before it is not read (a
// whole Load still reports it), and a last turn longer than one read of
// the file's end comes back whole.
func TestTailReadsOnlyTheLastTurn(t *testing.T) {
	root := t.TempDir()
	c := jsonl.Open(root)
	require.NoError(t, c.Create(ctx, hdr("s", "/w")))
	for range 50 {
		require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "early"),
			sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	}
	// The last turn is 300 KB over several reads, and quotes what a turn
	// start looks like on disk, inside a string and inside a tool call.
	lookalike := `{"seq":9,"kind":"turn/start"}`
	big := strings.Repeat("x", 100<<10) + "\n" + lookalike + "\n"
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, big),
		sessionlog.ToolCall("t1", "echo", map[string]any{"seq": 9, "kind": "turn/start"}),
		sessionlog.Message(sessionlog.RoleAssistant, big), sessionlog.Message(sessionlog.RoleAssistant, big+lookalike),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	require.NoError(t, c.Close())

	path := filepath.Join(root, jsonl.RelPath("/w", "s"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	damaged := strings.Replace(string(data), `"early"`, `"ea\xffy"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(damaged), 0o600))

	c2 := jsonl.Open(root)
	defer c2.Close()
	tail, err := c2.LoadTail(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, 6, len(tail.Events))
	assert.Equal(t, int64(151), tail.Events[0].Seq)
	assert.Equal(t, sessionlog.KindTurnStart, tail.Events[0].Kind)
	assert.True(t, big+lookalike == tail.Events[4].Text, "the last turn's text comes back whole")
	assert.Equal(t, sessionlog.ReasonCompleted, tail.Events[5].Reason.Kind)

	c3 := jsonl.Open(root)
	defer c3.Close()
	_, err = c3.Load(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt, "a whole load still reads every line")
	assert.Contains(t, err.Error(), "line 3")
}

// A damaged line inside the last turn fails a tail read as corrupt, and a
// tail that does not begin at a turn start is refused.
func TestTailRefusesDamageInTheLastTurn(t *testing.T) {
	root := t.TempDir()
	c := jsonl.Open(root)
	require.NoError(t, c.Create(ctx, hdr("s", "")))
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
		sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "late"), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	require.NoError(t, c.Close())
	path := filepath.Join(root, jsonl.RelPath("", "s"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), `"late"`, `"la\xffe"`, 1)), 0o600))

	c2 := jsonl.Open(root)
	defer c2.Close()
	_, err = c2.LoadTail(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)

	// The last turn/start's line made to look like a message's: the tail
	// search passes it and the tail begins mid-turn, which is refused.
	fixed := strings.Replace(string(data), `{"seq":3,"kind":"turn/start"}`, `{"seq":3,"kind":"step/end"}`, 1)
	require.NoError(t, os.WriteFile(path, []byte(fixed), 0o600))
	c3 := jsonl.Open(root)
	defer c3.Close()
	_, err = c3.LoadTail(ctx, "s")
	require.ErrorIs(t, err, sessionlog.ErrCorrupt)
}
