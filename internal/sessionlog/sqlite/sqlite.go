// Package sqlite is the sessionlog backend that keeps every session in one
// SQLite database (modernc.org/sqlite, no cgo).
//
// Schema (version SchemaVersion, recorded in PRAGMA user_version):
//
//	sessions(id PRIMARY KEY, cwd, header, last_seq)
//	events(session_id, seq, body, PRIMARY KEY(session_id, seq))
//
// header and body hold the same JSON records the other backends store. A
// batch is one IMMEDIATE transaction that inserts its events and advances
// sessions.last_seq, so SQLite itself rolls back a transaction cut short by
// a crash. Rows past last_seq can only come from a writer that bypassed that
// protocol; they are the torn tail (marker: last_seq) and are discarded on
// repair. Any other user_version, older or newer, is refused: there is no
// migration.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/tether-run/tether/internal/sessionlog"
)

// SchemaVersion is the only database schema this build reads or writes.
const SchemaVersion = 1

const schema = `
CREATE TABLE sessions (
	id       TEXT PRIMARY KEY,
	cwd      TEXT NOT NULL,
	header   TEXT NOT NULL,
	last_seq INTEGER NOT NULL
) STRICT;
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	body       TEXT NOT NULL,
	PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
`

// Store implements sessionlog.Storage on one database file.
type Store struct {
	db   *sql.DB
	path string
	// before, when set (by tests only), runs before every statement that
	// changes stored data and before every COMMIT, named by op; an error
	// fails the operation before it runs. Tests fail, block or crash a
	// write at an exact point with it.
	before sessionlog.Hook
}

// exec runs a statement that changes stored data.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, op, query string, args ...any) (sql.Result, error) {
	if err := s.before.Step(op); err != nil {
		return nil, err
	}
	return tx.ExecContext(ctx, query, args...)
}

// commit commits tx.
func (s *Store) commit(tx *sql.Tx) error {
	if err := s.before.Step("commit"); err != nil {
		return err
	}
	return tx.Commit()
}

var _ sessionlog.Storage = (*Store)(nil)

// NewStore opens (creating it when absent) the database at path and checks
// its schema version.
func NewStore(path string) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	// Create the file ourselves, exclusively and owner-only; the -wal and
	// -shm files SQLite adds take their mode from it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
		}
	case errors.Is(err, os.ErrExist):
		// Open it once ourselves: SQLite reports every open failure as
		// SQLITE_CANTOPEN, which would hide EACCES or ELOOP.
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: stat %s: %w", path, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("sqlite: %s is not a regular file", path)
		}
	default:
		return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	// Check the schema on a connection that sets nothing: the WAL journal
	// mode below is a persistent change to the file, which a database of
	// another version must not undergo before it is refused.
	probe, err := sql.Open("sqlite", path+"?_busy_timeout=10000")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	err = checkSchema(context.Background(), probe, path)
	if cerr := probe.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sqlite: close %s: %w", path, cerr)
	}
	if err != nil {
		return nil, err
	}
	dsn := path + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One connection: the Coordinator already serializes per session, and
	// a single writer never meets SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Open returns a session log kept in the database at path.
func Open(path string) (*sessionlog.Coordinator, error) {
	s, err := NewStore(path)
	if err != nil {
		return nil, err
	}
	return sessionlog.NewCoordinator(s), nil
}

// checkSchema creates the schema in an empty database and refuses, without
// changing it, any database whose version is not SchemaVersion.
func checkSchema(ctx context.Context, db *sql.DB, path string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer tx.Rollback()
	var version, tables int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("sqlite: read schema version of %s: %w", path, err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("sqlite: read schema of %s: %w", path, err)
	}
	switch {
	case version == SchemaVersion:
		return nil
	case version == 0 && tables == 0:
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("sqlite: create schema in %s: %w", path, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
			return fmt.Errorf("sqlite: record schema version in %s: %w", path, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlite: create schema in %s: %w", path, err)
		}
		return nil
	default:
		return fmt.Errorf("%w: sqlite: %s has schema version %d, this build reads only %d; there is no migration, move the file aside",
			sessionlog.ErrVersion, path, version, SchemaVersion)
	}
}

func (s *Store) load(ctx context.Context, id string, cwd *string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: load %s: %w", id, err)
	}
	defer tx.Rollback()
	var rowCwd, header string
	var lastSeq int64
	err = tx.QueryRowContext(ctx, "SELECT cwd, header, last_seq FROM sessions WHERE id = ?", id).Scan(&rowCwd, &header, &lastSeq)
	if errors.Is(err, sql.ErrNoRows) || err == nil && cwd != nil && rowCwd != *cwd {
		return nil, fmt.Errorf("sqlite: session %s: %w", id, sessionlog.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: load %s: %w", id, err)
	}
	h, err := sessionlog.DecodeHeader([]byte(header))
	if err != nil {
		return nil, fmt.Errorf("sqlite: session %s in %s: %w", id, s.path, err)
	}
	if h.ID != id || h.Cwd != rowCwd {
		return nil, fmt.Errorf("%w: sqlite: session %s header names %q in cwd %q", sessionlog.ErrCorrupt, id, h.ID, h.Cwd)
	}
	st := &sessionlog.Stored{Header: h}
	if depth == sessionlog.HeaderOnly {
		return st, nil
	}
	if depth == sessionlog.LastTurn {
		return st, loadTail(ctx, tx, st, lastSeq)
	}
	rows, err := tx.QueryContext(ctx, "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load events of %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, fmt.Errorf("sqlite: load events of %s: %w", id, err)
		}
		if seq > lastSeq {
			st.TornMarker = lastSeq
			break
		}
		e, err := sessionlog.DecodeEvent(body)
		if err != nil {
			return nil, fmt.Errorf("%w: sqlite: session %s seq %d: %v", sessionlog.ErrCorrupt, id, seq, err)
		}
		if e.Seq != seq {
			return nil, fmt.Errorf("%w: sqlite: session %s row %d holds seq %d", sessionlog.ErrCorrupt, id, seq, e.Seq)
		}
		st.Events = append(st.Events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: load events of %s: %w", id, err)
	}
	return st, nil
}

// LoadStored implements sessionlog.Storage.
func (s *Store) LoadStored(ctx context.Context, id string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	return s.load(ctx, id, nil, depth)
}

// LoadLive implements sessionlog.Storage: a row in another cwd is absent
// from this scope.
func (s *Store) LoadLive(ctx context.Context, id, cwd string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	return s.load(ctx, id, &cwd, depth)
}

func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, id string, events []sessionlog.Event) error {
	if len(events) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO events (session_id, seq, body) VALUES (?, ?, ?)")
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range events {
		body, err := sessionlog.EncodeEvent(e)
		if err != nil {
			return err
		}
		if err := s.before.Step("insert event"); err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, id, e.Seq, string(body)); err != nil {
			return err
		}
	}
	_, err = s.exec(ctx, tx, "update last_seq", "UPDATE sessions SET last_seq = ? WHERE id = ?", events[len(events)-1].Seq, id)
	return err
}

// lastSeq reads log id's last_seq in tx: ErrNotFound where no log has
// that id. what ("append to", "repair") names the call in its errors.
func lastSeq(ctx context.Context, tx *sql.Tx, what, id string) (int64, error) {
	var last int64
	err := tx.QueryRowContext(ctx, "SELECT last_seq FROM sessions WHERE id = ?", id).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlite: %s %s: %w", what, id, sessionlog.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: %s %s: %w", what, id, err)
	}
	return last, nil
}

// AppendBatch implements sessionlog.Storage: one transaction inserts the
// session row (when materializing) and the events, and advances last_seq.
func (s *Store) AppendBatch(ctx context.Context, b sessionlog.Batch) error {
	id := b.Header.ID
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: append to %s: %w", id, err)
	}
	defer tx.Rollback()
	if b.Materialize {
		h, err := sessionlog.EncodeHeader(b.Header)
		if err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, "insert session", "INSERT INTO sessions (id, cwd, header, last_seq) VALUES (?, ?, ?, 0) ON CONFLICT DO NOTHING",
			id, b.Header.Cwd, string(h))
		if err != nil {
			return fmt.Errorf("sqlite: create %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("%w: sqlite: session %s already exists", sessionlog.ErrCollision, id)
		}
	} else {
		last, err := lastSeq(ctx, tx, "append to", id)
		if err != nil {
			return err
		}
		if len(b.Events) > 0 && b.Events[0].Seq != last+1 {
			return fmt.Errorf("sqlite: append to %s: batch starts at seq %d but the log ends at %d", id, b.Events[0].Seq, last)
		}
	}
	if err := s.insertEvents(ctx, tx, id, b.Events); err != nil {
		return fmt.Errorf("sqlite: append to %s: %w", id, err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("sqlite: commit append to %s: %w", id, err)
	}
	return nil
}

// CommitRepair implements sessionlog.Storage: in one transaction, delete
// rows past the marker (the last committed seq) and insert the closers.
func (s *Store) CommitRepair(ctx context.Context, r sessionlog.Repair) error {
	id := r.Header.ID
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: repair %s: %w", id, err)
	}
	defer tx.Rollback()
	last, err := lastSeq(ctx, tx, "repair", id)
	if err != nil {
		return err
	}
	if r.TornMarker != nil {
		if m, ok := r.TornMarker.(int64); !ok || m != last {
			return fmt.Errorf("sqlite: repair %s: torn marker %v is not the last committed seq %d", id, r.TornMarker, last)
		}
		if _, err := s.exec(ctx, tx, "delete torn rows", "DELETE FROM events WHERE session_id = ? AND seq > ?", id, last); err != nil {
			return fmt.Errorf("sqlite: discard torn tail of %s: %w", id, err)
		}
	}
	if err := s.insertEvents(ctx, tx, id, r.Closers); err != nil {
		return fmt.Errorf("sqlite: repair %s: %w", id, err)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("sqlite: commit repair of %s: %w", id, err)
	}
	return nil
}

// DeleteStored implements sessionlog.Storage.
func (s *Store) DeleteStored(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: delete %s: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, "delete events", "DELETE FROM events WHERE session_id = ?", id); err != nil {
		return fmt.Errorf("sqlite: delete %s: %w", id, err)
	}
	res, err := s.exec(ctx, tx, "delete session", "DELETE FROM sessions WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("sqlite: delete %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: delete %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("sqlite: delete %s: %w", id, sessionlog.ErrNotFound)
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("sqlite: commit delete of %s: %w", id, err)
	}
	return nil
}

// List implements sessionlog.Storage.
func (s *Store) List(ctx context.Context) ([]sessionlog.Header, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, header FROM sessions ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	defer rows.Close()
	var out []sessionlog.Header
	for rows.Next() {
		var id, header string
		if err := rows.Scan(&id, &header); err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
		h, err := sessionlog.DecodeHeader([]byte(header))
		if err != nil {
			return nil, fmt.Errorf("sqlite: session %s in %s: %w", id, s.path, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	return out, nil
}

// Close implements sessionlog.Storage.
func (s *Store) Close() error { return s.db.Close() }

// loadTail reads st's events from the last turn/start on, walking the rows
// back from the end: a resume reads the last turn, not the session.
func loadTail(ctx context.Context, tx *sql.Tx, st *sessionlog.Stored, lastSeq int64) error {
	id := st.Header.ID
	rows, err := tx.QueryContext(ctx, "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq DESC", id)
	if err != nil {
		return fmt.Errorf("sqlite: load the last turn of %s: %w", id, err)
	}
	defer rows.Close()
	var back []sessionlog.Event
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return fmt.Errorf("sqlite: load the last turn of %s: %w", id, err)
		}
		if seq > lastSeq {
			st.TornMarker = lastSeq
			continue
		}
		e, err := sessionlog.DecodeEvent(body)
		if err != nil {
			return fmt.Errorf("%w: sqlite: session %s seq %d: %v", sessionlog.ErrCorrupt, id, seq, err)
		}
		if e.Seq != seq {
			return fmt.Errorf("%w: sqlite: session %s row %d holds seq %d", sessionlog.ErrCorrupt, id, seq, e.Seq)
		}
		back = append(back, e)
		if e.Kind == sessionlog.KindTurnStart {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: load the last turn of %s: %w", id, err)
	}
	slices.Reverse(back)
	st.Events = back
	return nil
}
