// Package packertest helps the backends test their session layouts: one
// suite every layout runs (Run), and archives that hold files under names
// of the test's choosing (Craft), as a worker with another idea
// of the layout, or anyone with a valid archive writer, could hand to
// UnpackSession. The packer's own hostile-archive tests (links, devices,
// unsafe paths, bombs) are in package packer.
package packertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/testenv/files"
)

// File is one file of a crafted archive: its name in the archive and its
// content.
type File struct{ Name, Body string }

// Craft returns a well-formed archive of backendName's session id holding
// exactly entries, under their names, the first as the session's main file.
// Names must be clean relative paths off the deny list (a packer never
// writes anything else); whether they belong to the session is for the
// layout under test to say when it unpacks the archive.
func Craft(t testing.TB, backendName, id string, entries ...File) []byte {
	t.Helper()
	env := agent.Env{StateRoot: t.TempDir()}
	var places []packer.Place
	for i, f := range entries {
		files.Write(t, env.StateRoot, f.Name, f.Body)
		places = append(places, packer.Place{Name: f.Name, Path: f.Name, Primary: i == 0})
	}
	asGiven := packer.Files(func(agent.Env, string) ([]packer.Place, error) { return places, nil })
	blob, err := packer.New(backendName, env, packer.DefaultLimits(), asGiven).PackSession(context.Background(), id)
	require.NoError(t, err, "craft an archive of %v", entries)
	return blob
}
