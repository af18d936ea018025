package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
)

var ctx = context.Background()

func hdr(id, cwd string) sessionlog.Header {
	return sessionlog.Header{ID: id, Cwd: cwd, Backend: "test"}
}

func count(t *testing.T, path, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, rawDB(t, path).QueryRow(query, args...).Scan(&n))
	return n
}

func TestNewDatabaseIsOwnerOnlyAndVersioned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	c, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, hdr("s", "/w")))
	assert.Zero(t, count(t, path, "SELECT count(*) FROM sessions"), "no row before the first append")
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart()))
	assert.Equal(t, 1, count(t, path, "SELECT count(*) FROM sessions"))
	assert.Equal(t, 1, count(t, path, "SELECT count(*) FROM events"))
	assert.Equal(t, SchemaVersion, count(t, path, "PRAGMA user_version"))
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
	require.NoError(t, c.Close())
}

// A database of another schema version, older or newer, is refused with
// ErrVersion and left as it was: the same bytes, the same rows, no journal
// mode switched.
func TestSchemaVersionIsEnforcedBothWays(t *testing.T) {
	for name, setup := range map[string]string{
		"newer": `PRAGMA user_version = 2;
			INSERT INTO sessions VALUES ('s', '/w', '{"id":"s","cwd":"/w","backend":"test","format_version":1}', 1);
			INSERT INTO events VALUES ('s', 1, '{"seq":1,"kind":"turn/start"}')`,
		"older, before versioning": `CREATE TABLE sessions (id TEXT PRIMARY KEY, header TEXT);
			INSERT INTO sessions VALUES ('s', '{"id":"s"}')`,
		"older, with tables": "PRAGMA user_version = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1)",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			if name == "newer" {
				s, err := NewStore(path)
				require.NoError(t, err)
				require.NoError(t, s.Close())
			}
			db := rawDB(t, path)
			_, err := db.Exec(setup)
			require.NoError(t, err)
			require.NoError(t, db.Close())
			rows := dump(t, path)
			bytes, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = NewStore(path)
			require.ErrorIs(t, err, sessionlog.ErrVersion)
			assert.Contains(t, err.Error(), "no migration")
			_, err = Open(path)
			require.ErrorIs(t, err, sessionlog.ErrVersion)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, slices.Equal(bytes, after), "the database file was modified")
			assert.Equal(t, string(rows), string(dump(t, path)))
		})
	}
}

// rowPastLastSeq returns a database whose session s has two committed
// events, an open turn, and a third row written without advancing last_seq
// in the same transaction.
func rowPastLastSeq(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	c, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, hdr("s", "")))
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "q")))
	require.NoError(t, c.Close())
	_, err = rawDB(t, path).Exec(`INSERT INTO events VALUES ('s', 3, '{"seq":3,"kind":"message","role":"assistant","text":"never committed"}')`)
	require.NoError(t, err)
	return path
}

func TestRowsPastLastSeqAreATornTail(t *testing.T) {
	path := rowPastLastSeq(t)
	st, err := NewStore(path)
	require.NoError(t, err)
	stored, err := st.LoadStored(ctx, "s", sessionlog.WithEvents)
	require.NoError(t, err)
	assert.Equal(t, int64(2), stored.TornMarker)
	assert.Len(t, stored.Events, 2)
	c2 := sessionlog.NewCoordinator(st)
	defer c2.Close()
	log, err := c2.Load(ctx, "s")
	require.NoError(t, err)
	require.Len(t, log.Events, 3)
	assert.Equal(t, sessionlog.KindTurnEnd, log.Events[2].Kind)
	assert.Equal(t, sessionlog.ReasonInterrupted, log.Events[2].Reason.Kind)
	assert.Equal(t, 3, count(t, path, "SELECT last_seq FROM sessions WHERE id = 's'"))
}

// A repair that fails at any of its statements leaves the committed rows
// and the rows past last_seq as they were, and the next Load repairs.
func TestRepairFaultKeepsRowsPastLastSeq(t *testing.T) {
	step := 1
	for ; ; step++ {
		path := rowPastLastSeq(t)
		before := dump(t, path)

		st, err := NewStore(path)
		require.NoError(t, err)
		n, fired := 0, ""
		st.before = func(op string) error {
			if n++; n == step {
				fired = op
				return syscall.EIO
			}
			return nil
		}
		c := sessionlog.NewCoordinator(st)
		log, err := c.Load(ctx, "s")
		if fired == "" {
			require.NoError(t, err)
			require.NoError(t, c.Close())
			break
		}
		require.ErrorIs(t, err, syscall.EIO, "a repair failing at %s", fired)
		require.Nil(t, log)
		assert.Equal(t, string(before), string(dump(t, path)), "a repair failing at %s changed rows", fired)
		st.before = nil
		log, err = c.Load(ctx, "s")
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.Len(t, log.Events, 3)
		assert.Equal(t, sessionlog.ReasonInterrupted, log.Events[2].Reason.Kind)
		assert.Equal(t, 3, count(t, path, "SELECT last_seq FROM sessions WHERE id = 's'"))
		assert.Equal(t, 3, count(t, path, "SELECT count(*) FROM events"))
	}
	require.Greater(t, step, 3, "the repair made too few statements")
}

func TestTransactionCutShortLeavesNoRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	c, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, hdr("s", "")))
	require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart()))
	require.NoError(t, c.Close())
	tearTransaction(t, path, "s", sessionlog.Event{Seq: 2, Kind: sessionlog.KindMessage, Role: sessionlog.RoleUser, Text: "lost"})
	assert.Equal(t, 1, count(t, path, "SELECT count(*) FROM events"))
	assert.Equal(t, 1, count(t, path, "SELECT last_seq FROM sessions"))
}

func TestOpenFaultsAreNotAbsence(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	_, err := NewStore(filepath.Join(dir, "file", "s.db"))
	require.ErrorIs(t, err, syscall.ENOTDIR)
	require.NotErrorIs(t, err, sessionlog.ErrNotFound)

	target := filepath.Join(dir, "real.db")
	require.NoError(t, os.WriteFile(target, nil, 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "link.db")))
	_, err = NewStore(filepath.Join(dir, "link.db"))
	require.ErrorIs(t, err, syscall.ELOOP, "a symlinked database is refused")
}

// TestEACCESIsNotAbsence_RealPermissionDenied opens a database the user may
// not write (as uid 65534 in a child process when the tests run as root).
func TestEACCESIsNotAbsence_RealPermissionDenied(t *testing.T) {
	if contracttest.InChild() {
		_, err := NewStore(os.Getenv("SQLITE_EACCES_DB"))
		require.ErrorIs(t, err, syscall.EACCES)
		require.NotErrorIs(t, err, sessionlog.ErrNotFound)
		t.Logf("NewStore: %v", err)
		return
	}
	path := filepath.Join(contracttest.WorldReadableTempDir(t), "s.db")
	s, err := NewStore(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	if !contracttest.AsNobody(t, "SQLITE_EACCES_DB="+path) {
		require.NoError(t, os.Chmod(path, 0o000))
		_, err := NewStore(path)
		require.ErrorIs(t, err, syscall.EACCES)
	}
}
