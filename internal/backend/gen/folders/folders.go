// Package folders reads what the generators of backends need from the
// source tree: the backend folders under internal/backend and the
// repository's .env. It imports no backend and not the catalogue, so a
// generator that uses it runs whatever state the generated files are in;
// and it writes (or, with check, compares) the files a generator made.
package folders

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Folder is one backend found under internal/backend.
type Folder struct {
	// Dir is its folder's name under internal/backend; Name the backend's
	// (its facts' `const Name`); Pin the .env variable its facts name.
	Dir, Name, Pin string
	// Session says internal/backend/<Dir>/session declares a Transcript.
	Session bool
}

var (
	namePattern       = regexp.MustCompile(`(?m)^const Name = "([a-z0-9_]+)"`)
	backendPattern    = regexp.MustCompile(`(?m)^var Backend = `)
	pinPattern        = regexp.MustCompile(`\bPin:\s*"([A-Z0-9_]+)"`)
	transcriptPattern = regexp.MustCompile(`(?m)^var Transcript = `)
)

// Scan finds every backend folder of the repository at root:
// internal/backend/<dir>/facts declaring a Name and a Backend, in the
// order of their folders' names.
func Scan(root string) ([]Folder, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "internal", "backend", "*", "facts"))
	if err != nil {
		return nil, err
	}
	var out []Folder
	for _, d := range dirs {
		src, err := sources(d)
		if err != nil {
			return nil, err
		}
		m := namePattern.FindSubmatch(src)
		if m == nil || !backendPattern.Match(src) {
			continue
		}
		f := Folder{Dir: filepath.Base(filepath.Dir(d)), Name: string(m[1])}
		if p := pinPattern.FindSubmatch(src); p != nil {
			f.Pin = string(p[1])
		}
		ses, err := sources(filepath.Join(filepath.Dir(d), "session"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		f.Session = transcriptPattern.Match(ses)
		out = append(out, f)
	}
	return out, nil
}

// sources is every non-test Go file of directory dir, concatenated.
func sources(dir string) ([]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// Var is one NAME=value line of an .env file.
type Var struct{ Name, Value string }

// Env reads the .env file at path: its NAME=value lines, in order.
func Env(path string) ([]Var, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Var
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out = append(out, Var{k, v})
		}
	}
	return out, sc.Err()
}

// Sync writes each of files (by path relative to root) whose content
// differs from what is there; with check it writes nothing. It returns
// the paths that differed.
func Sync(root string, files map[string][]byte, check bool) (stale []string, err error) {
	for rel, want := range files {
		p := filepath.Join(root, rel)
		if have, _ := os.ReadFile(p); bytes.Equal(have, want) {
			continue
		}
		stale = append(stale, rel)
		if check {
			continue
		}
		if err := os.WriteFile(p, want, 0o644); err != nil {
			return stale, err
		}
	}
	return stale, nil
}
