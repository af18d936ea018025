package jsonl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

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
