// Package packertest helps the backends test their session layouts: it
// writes and reads files in a state root, and crafts archives that hold
// files under names of the test's choosing, as a worker with another idea
// of the layout, or anyone with a valid archive writer, could hand to
// UnpackSession. The packer's own hostile-archive tests (links, devices,
// unsafe paths, bombs) are in package packer.
package packertest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
)

// WriteFile writes content to rel (slash-separated) under root, making
// the folders on the way.
func WriteFile(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// ReadFile returns the content of rel under root.
func ReadFile(t testing.TB, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

// Files returns the regular files under root, slash-separated, relative,
// sorted; none when root does not exist.
func Files(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// File is one file of a crafted archive: its name in the archive and its
// content.
type File struct{ Name, Body string }

// Craft returns a well-formed archive of backendName's session id holding
// exactly files, under their names, the first as the session's main file.
// Names must be clean relative paths off the deny list (a packer never
// writes anything else); whether they belong to the session is for the
// layout under test to say when it unpacks the archive.
func Craft(t testing.TB, backendName, id string, files ...File) []byte {
	t.Helper()
	env := agent.Env{StateRoot: t.TempDir()}
	var places []packer.Place
	for i, f := range files {
		WriteFile(t, env.StateRoot, f.Name, f.Body)
		places = append(places, packer.Place{Name: f.Name, Path: f.Name, Primary: i == 0})
	}
	asGiven := packer.Files(func(agent.Env, string) ([]packer.Place, error) { return places, nil })
	blob, err := packer.New(backendName, env, packer.DefaultLimits(), asGiven).PackSession(context.Background(), id)
	require.NoError(t, err, "craft an archive of %v", files)
	return blob
}
