package askuser_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
)

func connect(t *testing.T, record string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := askuser.NewServer(record).Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].(*mcp.TextContent).Text
}

func TestAskUserRecordsQuestions(t *testing.T) {
	record := filepath.Join(t.TempDir(), "ask.json")
	cs := connect(t, record)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, askuser.ToolName, tools.Tools[0].Name)

	rec, err := askuser.ReadRecord(record)
	require.NoError(t, err)
	assert.Nil(t, rec, "nothing asked yet")

	params := &mcp.CallToolParams{Name: askuser.ToolName, Arguments: map[string]any{"questions": []string{"which colour?", " "}}}
	params.SetMeta(map[string]any{"claudecode/toolUseId": "toolu_1"})
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, askuser.ToolResultText, text(res))

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: askuser.ToolName, Arguments: map[string]any{"questions": []string{"and size?"}}})
	require.NoError(t, err)
	assert.False(t, res.IsError)

	rec, err = askuser.ReadRecord(record)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []agent.Question{{ID: "q1", Text: "which colour?"}, {ID: "q2", Text: "and size?"}}, rec.Questions)
	assert.Equal(t, []string{"toolu_1"}, rec.ToolUseIDs)
}

func TestAskUserRefusesNoQuestion(t *testing.T) {
	record := filepath.Join(t.TempDir(), "ask.json")
	res, err := connect(t, record).CallTool(context.Background(),
		&mcp.CallToolParams{Name: askuser.ToolName, Arguments: map[string]any{"questions": []string{}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	_, statErr := os.Stat(record)
	assert.True(t, os.IsNotExist(statErr))
}

// TestSubcommandOverStdio runs the server the way a CLI does: as a child
// process speaking MCP on stdin/stdout.
func TestSubcommandOverStdio(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tether-ask-user")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tether-ask-user")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	record := filepath.Join(dir, "ask.json")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, askuser.Command(nil, record)...)}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: askuser.ToolName, Arguments: map[string]any{"questions": []string{"ok?"}}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	require.NoError(t, cs.Close())
	rec, err := askuser.ReadRecord(record)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "ok?", rec.Questions[0].Text)
}

func TestMainNeedsRecord(t *testing.T) {
	assert.Equal(t, 2, askuser.Main(nil))
}

// The record lies in the visit's scratch directory, where the agent can
// write: one it linked to a secret of the worker or to /dev/zero is
// refused with the typed error, naming no byte of the target; the worker
// neither reads it nor runs out of memory.
func TestReadRecordRefusesALinkedRecord(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(secret, []byte("aws_access_key_id = AKIA-TETHER-TEST\n"), 0o600))
	for _, target := range []string{secret, "/dev/zero"} {
		dir := t.TempDir()
		record := filepath.Join(dir, "ask-user.json")
		require.NoError(t, os.Symlink(target, record))
		rec, err := askuser.ReadRecord(record)
		require.ErrorIs(t, err, agent.ErrUnsafeFile, target)
		assert.Nil(t, rec)
		assert.NotContains(t, err.Error(), "invalid character", "nothing of the target was parsed")
		assert.NotContains(t, err.Error(), "AKIA")
	}
}
