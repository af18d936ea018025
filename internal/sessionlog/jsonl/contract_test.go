package jsonl_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

func TestContract(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) *contracttest.Harness {
		root := filepath.Join(t.TempDir(), "sessions")
		return &contracttest.Harness{
			Open: func(*testing.T) (sessionlog.Storage, error) { return jsonl.NewStore(root), nil },
			Tear: func(t *testing.T, id string, e sessionlog.Event) { tearLine(t, root, id, e) },
			Corrupt: func(t *testing.T, id string, seq int64) {
				path := logPath(t, root, id)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				lines := bytes.SplitAfter(data, []byte("\n"))
				lines[seq][0] = '#' // line 0 is the header, line n holds seq n
				require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o600))
			},
			NotDir: func(t *testing.T) {
				require.NoError(t, os.Rename(root, root+".moved"))
				require.NoError(t, os.WriteFile(root, []byte("a file where the store's directory was"), 0o600))
			},
		}
	})
}

func logPath(t *testing.T, root, id string) string {
	t.Helper()
	rel, err := jsonl.Locate(root, id)
	require.NoError(t, err)
	return filepath.Join(root, rel)
}

// tearLine appends e's line the way the store does, then cuts the file in
// the middle of that line: the state a crash during the write leaves.
func tearLine(t *testing.T, root, id string, e sessionlog.Event) {
	t.Helper()
	path := logPath(t, root, id)
	line, err := sessionlog.EncodeEvent(e)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(append(line, '\n'))
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Truncate(fi.Size()-int64(len(line))/2))
	require.NoError(t, f.Close())
}
