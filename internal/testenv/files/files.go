// Package files writes, reads and lists the files of a directory tree in
// tests, by slash-separated paths relative to the tree's root. It imports
// nothing of Tether's, so any package's own tests can use it.
package files

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Write writes content to rel under root, making the folders on the way.
func Write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// Read returns the content of rel under root.
func Read(t testing.TB, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

// Tree returns every path under root, sorted, with folders suffixed "/";
// none when root does not exist.
func Tree(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// List returns every path under root that is not a folder (files, and
// links or special files if any), sorted.
func List(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	for _, p := range Tree(t, root) {
		if !strings.HasSuffix(p, "/") {
			out = append(out, p)
		}
	}
	return out
}
