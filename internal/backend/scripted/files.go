package scripted

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File cues make the scripted agent edit its working directory, as a
// coding agent would, so demos and tests of durable workspaces need no
// model:
//
//	WRITE: path = content   write the file (content is a Go-quoted-style
//	                        text: \n and \t are newline and tab)
//	DELETE: path            remove the file
//
// A path must stay inside the working directory.
const (
	CueWrite  = "WRITE:"
	CueDelete = "DELETE:"
)

// applyFiles carries out the file cues of a reply in dir.
func applyFiles(dir, text string) error {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, CueWrite):
			spec := strings.TrimSpace(strings.TrimPrefix(line, CueWrite))
			name, content, ok := strings.Cut(spec, " = ")
			if !ok {
				return fmt.Errorf("%q: want %s path = content", line, CueWrite)
			}
			p, err := local(dir, name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(unescape(content)), 0o644); err != nil {
				return err
			}
		case strings.HasPrefix(line, CueDelete):
			p, err := local(dir, strings.TrimSpace(strings.TrimPrefix(line, CueDelete)))
			if err != nil {
				return err
			}
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

func local(dir, name string) (string, error) {
	name = strings.TrimSpace(name)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%q is not a path inside the working directory", name)
	}
	return filepath.Join(dir, name), nil
}

func unescape(s string) string {
	if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`); err == nil {
		return u
	}
	return s
}
