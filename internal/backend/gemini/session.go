package gemini

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/untrusted"
)

// pinProject makes Gemini CLI file the visit's working directory under
// ProjectSlug. The CLI picks a project's slug from its registry,
// <root>/.gemini/projects.json ({"projects": {<path>: <slug>}}), and
// trusts a slug only when the marker file .project_root in
// <root>/.gemini/tmp/<slug>/ and <root>/.gemini/history/<slug>/ names the
// same path; otherwise it claims a new slug after the directory's base
// name. Writing all three before the CLI starts keeps every session of the
// root in one chats directory, whatever the working directory.
func pinProject(env agent.Env) error {
	wd, err := filepath.Abs(env.Workdir)
	if err != nil {
		return fmt.Errorf("gemini: working directory: %w", err)
	}
	// The CLI registers the directory it runs in as the kernel reports it.
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	reg, err := json.MarshalIndent(map[string]any{"projects": map[string]string{wd: ProjectSlug}}, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		rel  string
		data []byte
	}{
		{".gemini/tmp/" + ProjectSlug + "/.project_root", []byte(wd)},
		{".gemini/history/" + ProjectSlug + "/.project_root", []byte(wd)},
		{".gemini/projects.json", reg},
	} {
		if err := writeState(env.StateRoot, f.rel, f.data); err != nil {
			return err
		}
	}
	return nil
}

// writeState writes a file of the CLI's own state below root through a
// temporary file and a rename, so the CLI never reads half of it, and
// never through a link the agent planted on the way
// (untrusted.WriteFile).
func writeState(root, rel string, data []byte) error {
	if err := untrusted.WriteFile(root, rel, data, 0o600); err != nil {
		return fmt.Errorf("gemini: write %s: %w", rel, err)
	}
	return nil
}

// maxSession caps a session file the executor reads: one Tether would pack.
const maxSession = packer.DefaultMaxFileBytes

// openSession opens the session file at path, below the state root: the
// agent can write there, so the file is read as untrusted (a link, a FIFO
// or a device in its place is agent.ErrUnsafeFile).
func openSession(root, path string) (*untrusted.File, *bufio.Reader, error) {
	rel, err := untrusted.Rel(root, path)
	if err != nil {
		return nil, nil, err
	}
	f, err := untrusted.Open(root, rel)
	if err != nil {
		return nil, nil, err
	}
	return f, bufio.NewReaderSize(f.Limit(maxSession), 64<<10), nil
}

// sessionIDOf reads the session id from the first line of the session
// file at path, below root.
func sessionIDOf(root, path string) (string, error) {
	f, r, err := openSession(root, path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := cliexec.HeaderLine(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var h struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &h); err != nil {
		return "", fmt.Errorf("%s: first line: %w", path, err)
	}
	return h.SessionID, nil
}

// fork copies the session in the file at path (below root) under a new
// id, beside it, and returns the new id. Gemini CLI has no fork of its own
// (its --session-file import keeps only the text of the messages), so the
// copy is the whole conversation, tool calls included, and the CLI resumes
// it by id; the original never sees the fork's turns.
func fork(root, path string) (string, error) {
	f, r, err := openSession(root, path)
	if err != nil {
		return "", fmt.Errorf("gemini: fork: %w", err)
	}
	defer f.Close()
	first, err := cliexec.HeaderLine(r)
	if err != nil {
		return "", fmt.Errorf("gemini: fork %s: %w", path, err)
	}
	var h map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(first), &h); err != nil {
		return "", fmt.Errorf("gemini: fork %s: first line: %w", path, err)
	}
	id, err := newID()
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	h["sessionId"] = id
	h["startTime"] = now.Format(time.RFC3339Nano)
	head, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	// Gemini CLI replays metadata updates ({"$set": {...}}) over the
	// first line, and a resumed session's file carries its id again in
	// them; the last word is the new id.
	set, err := json.Marshal(map[string]any{"$set": map[string]any{"sessionId": id}})
	if err != nil {
		return "", err
	}
	name := "session-" + now.Format("2006-01-02T15-04") + "-" + id[:8] + ".jsonl"
	dir, err := untrusted.Rel(root, filepath.Dir(path))
	if err != nil {
		return "", err
	}
	err = untrusted.WriteFileFrom(root, filepath.Join(dir, name), 0o600, func(w io.Writer) error {
		if _, err := w.Write(append(head, '\n')); err != nil {
			return err
		}
		last, err := copyLast(w, r)
		if err != nil {
			return err
		}
		if last != 0 && last != '\n' {
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return err
			}
		}
		_, err = w.Write(append(set, '\n'))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("gemini: fork: %w", err)
	}
	return id, nil
}

// copyLast copies r to w and returns the last byte copied (0 for none).
func copyLast(w io.Writer, r io.Reader) (byte, error) {
	var last byte
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			last = buf[n-1]
			if _, werr := w.Write(buf[:n]); werr != nil {
				return last, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
	}
}

// newID is a random (version 4) UUID, as Gemini CLI's own session ids.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}
