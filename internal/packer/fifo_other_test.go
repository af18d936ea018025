//go:build !unix

package packer

import "testing"

func mkfifo(t testing.TB, _ string) {
	t.Skip("fifos are a unix feature")
}
