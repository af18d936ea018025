package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
)

func TestContract(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) *contracttest.Harness {
		path := filepath.Join(t.TempDir(), "state", "sessions.db")
		return &contracttest.Harness{
			Open: func(*testing.T) (sessionlog.Storage, error) { return NewStore(path) },
			Tear: func(t *testing.T, id string, e sessionlog.Event) { tearTransaction(t, path, id, e) },
			Corrupt: func(t *testing.T, id string, seq int64) {
				db := rawDB(t, path)
				_, err := db.Exec("UPDATE events SET body = '{\"seq\":' WHERE session_id = ? AND seq = ?", id, seq)
				require.NoError(t, err)
			},
			NotDir: func(t *testing.T) {
				dir := filepath.Dir(path)
				require.NoError(t, os.Rename(dir, dir+".moved"))
				require.NoError(t, os.WriteFile(dir, []byte("a file where the database's directory was"), 0o600))
			},
		}
	})
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=10000")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

const (
	tearDBEnv    = "SQLITE_TEAR_DB"
	tearIDEnv    = "SQLITE_TEAR_ID"
	tearEventEnv = "SQLITE_TEAR_EVENT"
)

// tearTransaction runs a child process that appends e to id inside a real
// transaction and is SIGKILLed before COMMIT: a transaction cut short.
func tearTransaction(t *testing.T, path, id string, e sessionlog.Event) {
	t.Helper()
	ev, err := json.Marshal(e)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTornTransactionChild$")
	cmd.Env = append(os.Environ(), tearDBEnv+"="+path, tearIDEnv+"="+id, tearEventEnv+"="+string(ev))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "child should have been killed, got %v\n%s", err, out)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child should die by SIGKILL before COMMIT: %v\n%s", err, out)
}

// TestTornTransactionChild is the child half of tearTransaction.
func TestTornTransactionChild(t *testing.T) {
	path := os.Getenv(tearDBEnv)
	if path == "" {
		t.Skip("helper process for the crash tests of the contract suite")
	}
	var e sessionlog.Event
	require.NoError(t, json.Unmarshal([]byte(os.Getenv(tearEventEnv)), &e))
	s, err := NewStore(path)
	require.NoError(t, err)
	st, err := s.LoadStored(context.Background(), os.Getenv(tearIDEnv), sessionlog.HeaderOnly)
	require.NoError(t, err)
	s.beforeCommit = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	err = s.AppendBatch(context.Background(), sessionlog.Batch{Header: st.Header, Events: []sessionlog.Event{e}})
	t.Fatalf("append returned (%v) instead of dying before COMMIT", err)
}
