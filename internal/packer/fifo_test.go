//go:build unix

package packer

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func mkfifo(t testing.TB, p string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(p, 0o600))
}
