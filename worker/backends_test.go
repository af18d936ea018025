package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/askuser"
)

// The ask_user server is the small tether-ask-user beside the worker when
// it is there and executable; else the worker's own subcommand.
func TestAskUserServerIsTheSmallOneBesideTheWorker(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "tether-worker")
	small := filepath.Join(dir, "tether-ask-user")
	assert.Equal(t, []string{self, askuser.Subcommand}, besideSelf(self, "tether-ask-user", askuser.Subcommand), "none beside it")

	require.NoError(t, os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644))
	assert.Equal(t, []string{self, askuser.Subcommand}, besideSelf(self, "tether-ask-user", askuser.Subcommand), "not executable")

	require.NoError(t, os.Chmod(small, 0o755))
	assert.Equal(t, []string{small}, besideSelf(self, "tether-ask-user", askuser.Subcommand))

	require.NoError(t, os.Remove(small))
	require.NoError(t, os.Mkdir(small, 0o755))
	assert.Equal(t, []string{self, askuser.Subcommand}, besideSelf(self, "tether-ask-user", askuser.Subcommand), "a directory")
}
