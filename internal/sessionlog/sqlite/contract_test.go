package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
)

// crashDBEnv tells TestCrashChild where the database is.
const crashDBEnv = "SQLITE_CRASH_DB"

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
			Intercept: intercept,
			Crash: func(t *testing.T, b sessionlog.Batch, step int) bool {
				return crash(t, path, b, contracttest.CrashPoint{Step: step})
			},
			PutRaw: func(t *testing.T, id, cwd string, header []byte, events [][]byte) {
				s, err := NewStore(path)
				require.NoError(t, err)
				require.NoError(t, s.Close())
				db := rawDB(t, path)
				_, err = db.Exec("INSERT INTO sessions (id, cwd, header, last_seq) VALUES (?, ?, ?, ?)", id, cwd, string(header), len(events))
				require.NoError(t, err)
				for i, e := range events {
					_, err = db.Exec("INSERT INTO events (session_id, seq, body) VALUES (?, ?, ?)", id, i+1, string(e))
					require.NoError(t, err)
				}
				require.NoError(t, db.Close())
			},
			Snapshot: func(t *testing.T) []byte { return dump(t, path) },
		}
	})
}

func intercept(st sessionlog.Storage, before func(op string) error) { st.(*Store).before = before }

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=10000")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// dump is the schema version, the schema and every row of every table of
// the database, in a fixed order.
func dump(t *testing.T, path string) []byte {
	t.Helper()
	db := rawDB(t, path)
	var b strings.Builder
	var tables []string
	for _, q := range []string{"PRAGMA user_version", "SELECT type, name, sql FROM sqlite_master ORDER BY name"} {
		for _, row := range query(t, db, q) {
			fmt.Fprintf(&b, "%q\n", row)
			if len(row) == 3 && row[0] == "table" {
				tables = append(tables, row[1].(string))
			}
		}
	}
	for _, table := range tables {
		rows := query(t, db, fmt.Sprintf("SELECT * FROM %q", table))
		lines := make([]string, len(rows))
		for i, row := range rows {
			lines[i] = fmt.Sprintf("%s %q", table, row)
		}
		slices.Sort(lines)
		fmt.Fprintf(&b, "%s\n", strings.Join(lines, "\n"))
	}
	require.NoError(t, db.Close())
	return []byte(b.String())
}

func query(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		out = append(out, vals)
	}
	require.NoError(t, rows.Err())
	return out
}

// crash runs b in a child process that dies by SIGKILL at the crash point.
func crash(t *testing.T, path string, b sessionlog.Batch, at contracttest.CrashPoint) bool {
	return contracttest.CrashInChild(t, "TestCrashChild", []string{crashDBEnv + "=" + path}, b, at)
}

// tearTransaction appends e to id in a child process that is SIGKILLed
// inside the transaction, just before COMMIT: a transaction cut short.
func tearTransaction(t *testing.T, path, id string, e sessionlog.Event) {
	t.Helper()
	s, err := NewStore(path)
	require.NoError(t, err)
	st, err := s.LoadStored(t.Context(), id, sessionlog.HeaderOnly)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	b := sessionlog.Batch{Header: st.Header, Events: []sessionlog.Event{e}}
	require.True(t, crash(t, path, b, contracttest.CrashPoint{Op: "commit"}), "the writer must die before COMMIT")
}

// TestCrashChild is the child process of the crash tests.
func TestCrashChild(t *testing.T) {
	contracttest.CrashChild(t, func() (sessionlog.Storage, error) { return NewStore(os.Getenv(crashDBEnv)) }, intercept)
}
