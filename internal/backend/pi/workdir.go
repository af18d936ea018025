package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/untrusted"
)

// adoptWorkdir makes the session in file belong to workdir. pi runs a
// resumed session's tools in the working directory its header names, not
// in the one it was started in, and refuses to run (exit 1) when that
// directory does not exist; a session restored onto another worker, or
// into another working directory, names the old one. The header line is
// rewritten in place (through a temporary file and a rename) only when
// it names another directory.
//
// The session file lies in the state root, where the agent can write: it
// is opened as untrusted (agent.ErrUnsafeFile for a link, a FIFO or a
// device in its place), its header line read up to cliexec.MaxHeaderLine,
// and the rest copied up to a session file's cap.
func adoptWorkdir(root, file, workdir string) error {
	rel, err := untrusted.Rel(root, file)
	if err != nil {
		return err
	}
	f, err := untrusted.Open(root, rel)
	if err != nil {
		return fmt.Errorf("pi: open session %s: %w", file, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f.Limit(packer.DefaultMaxFileBytes), 64*1024)
	first, err := cliexec.HeaderLine(r)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("pi: read session %s: %w", file, err)
	}
	var header map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(first), &header) != nil || string(header["type"]) != `"session"` {
		return nil // not a header pi wrote: leave the file to pi
	}
	var cwd string
	_ = json.Unmarshal(header["cwd"], &cwd)
	if cwd == workdir {
		return nil
	}
	header["cwd"], _ = json.Marshal(workdir)
	line, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("pi: session %s: %w", file, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("pi: session %s: %w", file, err)
	}
	// The agent may have put anything at the file's name; what replaces it
	// is a plain file beside it.
	tmp, err := os.CreateTemp(filepath.Dir(file), ".adopt-*")
	if err != nil {
		return fmt.Errorf("pi: session %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(line, '\n'))
	if err == nil {
		_, err = io.Copy(tmp, r)
	}
	if err == nil {
		err = tmp.Chmod(st.Mode().Perm())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("pi: move session %s to working directory %s: %w", file, workdir, err)
	}
	return nil
}
