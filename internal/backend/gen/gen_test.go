package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// What go generate ./internal/backend writes is what the repository
// holds: the worker's constructors and the docs' lists of backends and
// their variables follow the catalogue.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := testenv.Root()
	files, err := Generate(root)
	require.NoError(t, err)
	require.Contains(t, files, "internal/backend/registry_gen.go")
	for rel, want := range files {
		have, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(have), "%s is out of date: run go generate ./internal/backend", rel)
	}
}
