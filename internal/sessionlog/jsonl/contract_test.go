package jsonl_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// crashRootEnv tells TestCrashChild where the store is.
const crashRootEnv = "JSONL_CRASH_ROOT"

func TestContract(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) *contracttest.Harness {
		root := filepath.Join(t.TempDir(), "sessions")
		crash := func(t *testing.T, b sessionlog.Batch, at contracttest.CrashPoint) bool {
			return contracttest.CrashInChild(t, "TestCrashChild", []string{crashRootEnv + "=" + root}, b, at)
		}
		return &contracttest.Harness{
			Open: func(*testing.T) (sessionlog.Storage, error) { return jsonl.NewStore(root), nil },
			Tear: func(t *testing.T, id string, e sessionlog.Event) {
				st, err := jsonl.NewStore(root).LoadStored(ctx, id, sessionlog.HeaderOnly)
				require.NoError(t, err)
				b := sessionlog.Batch{Header: st.Header, Events: []sessionlog.Event{e}}
				require.True(t, crash(t, b, contracttest.CrashPoint{Op: "write (second half)"}), "the writer must die in the middle of its write")
			},
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
			Intercept: jsonl.Intercept,
			Crash: func(t *testing.T, b sessionlog.Batch, step int) bool {
				return crash(t, b, contracttest.CrashPoint{Step: step})
			},
			PutRaw: func(t *testing.T, id, cwd string, header []byte, events [][]byte) {
				path := filepath.Join(root, jsonl.RelPath(cwd, id))
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
				data := append(append([]byte(nil), header...), '\n')
				for _, e := range events {
					data = append(append(data, e...), '\n')
				}
				require.NoError(t, os.WriteFile(path, data, 0o600))
			},
			Snapshot: func(t *testing.T) []byte { return snapshot(t, root) },
		}
	})
}

// TestCrashChild is the child process of the contract suite's crash tests.
func TestCrashChild(t *testing.T) {
	contracttest.CrashChild(t, func() (sessionlog.Storage, error) {
		return jsonl.NewStore(os.Getenv(crashRootEnv)), nil
	}, jsonl.Intercept)
}

// snapshot lists every directory and file under root with its mode and
// bytes, in a fixed order.
func snapshot(t *testing.T, root string) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s %v\n", path, fi.Mode())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&buf, "%d bytes\n%s\n", len(data), data)
		}
		return nil
	})
	require.NoError(t, err)
	return buf.Bytes()
}

func logPath(t *testing.T, root, id string) string {
	t.Helper()
	rel, err := jsonl.Locate(root, id)
	require.NoError(t, err)
	return filepath.Join(root, rel)
}
