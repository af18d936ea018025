package gemini

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-run/tether/internal/agent"
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
// temporary file and a rename, so the CLI never reads half of it.
func writeState(root, rel string, data []byte) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("gemini: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("gemini: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("gemini: write %s: %w", rel, werr)
	}
	return nil
}

// maxHeader bounds the first line of a session file that is read for its id.
const maxHeader = 1 << 20

// sessionIDOf reads the session id from the first line of a session file.
func sessionIDOf(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return "", err
	}
	if len(line) > maxHeader {
		return "", fmt.Errorf("%s: first line too long", file)
	}
	var h struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &h); err != nil {
		return "", fmt.Errorf("%s: first line: %w", file, err)
	}
	return h.SessionID, nil
}

// fork copies the session in file under a new id, beside it, and returns
// the new id. Gemini CLI has no fork of its own (its --session-file import
// keeps only the text of the messages), so the copy is the whole
// conversation, tool calls included, and the CLI resumes it by id; the
// original never sees the fork's turns.
func fork(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("gemini: fork: %w", err)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(first, &h); err != nil {
		return "", fmt.Errorf("gemini: fork %s: first line: %w", file, err)
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
	out := append(append(head, '\n'), rest...)
	if len(rest) > 0 && rest[len(rest)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(append(out, set...), '\n')
	if err := writeState(filepath.Dir(file), name, out); err != nil {
		return "", err
	}
	return id, nil
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
