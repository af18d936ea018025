package scripted

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/scripted/session"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// A session moves between state roots in the shared packer's archive, as
// its one log file named log/<id>.jsonl: the bucket is left out, because it
// spells the working directory of the machine the session was created on.
//
// The shared packer places a session as a function of the env and the id
// alone, so it cannot know which bucket an archived log came from. An
// unpack therefore replaces the copy the state root already holds, in
// whatever bucket, and otherwise puts the log under the bucket of the
// env's working directory. The session log reads a log only in the bucket
// of its header's cwd, so the first resume files such a log back under that
// bucket (settle), keeping the header, and with it the session, unchanged.

// maxHeaderLine bounds the header line settle reads (the session log
// accepts a cwd of up to PATH_MAX before JSON escaping).
const maxHeaderLine = 64 << 10

// places is the session's one part for the shared packer: its log where the
// state root holds it, in any bucket, or where an unpack puts a log the
// root does not hold yet.
func places(env agent.Env, id string) ([]packer.Place, error) {
	rel, err := jsonl.Locate(SessionsDir(env.StateRoot), id)
	switch {
	case errors.Is(err, sessionlog.ErrNotFound):
		rel = jsonl.RelPath(env.Workdir, id)
	case err != nil:
		return nil, fmt.Errorf("scripted: %w", err)
	}
	return []packer.Place{{
		Name:    session.ArchiveName(id),
		Path:    sessionsDir + "/" + filepath.ToSlash(rel),
		Primary: true,
	}}, nil
}

// settle moves the log of id, if an unpack left it under a bucket other
// than its header's cwd's, to that bucket, where the session log looks for
// it. A log it cannot read is left where it is for the load to report, as a
// missing session or as the fault it is.
func (b *Backend) settle(root, id string) error {
	sessions := SessionsDir(root)
	rel, err := jsonl.Locate(sessions, id)
	if err != nil {
		return nil
	}
	h, err := readHeader(filepath.Join(sessions, rel))
	if err != nil || h.ID != id || h.Backend != Name {
		return nil
	}
	want := jsonl.RelPath(h.Cwd, id)
	if want == rel {
		return nil
	}
	dir := filepath.Join(sessions, filepath.Dir(want))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; remove it so the session's log can move there", dir)
	}
	dst := filepath.Join(sessions, want)
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is in the way of the session's log (at %s); remove it", dst, rel)
	}
	if err := os.Rename(filepath.Join(sessions, rel), dst); err != nil {
		return err
	}
	if err := jsonl.SyncDir(dir); err != nil {
		return err
	}
	if err := jsonl.SyncDir(filepath.Join(sessions, filepath.Dir(rel))); err != nil {
		return err
	}
	b.logger.Debug("scripted: moved an unpacked session log to its header's bucket", "session_id", id, "from", rel, "to", want)
	return nil
}

// readHeader decodes the first line of a log, without following a link.
func readHeader(name string) (sessionlog.Header, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return sessionlog.Header{}, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, maxHeaderLine).ReadSlice('\n')
	if err != nil {
		return sessionlog.Header{}, err
	}
	return sessionlog.DecodeHeader(line)
}
