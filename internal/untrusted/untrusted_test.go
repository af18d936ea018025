package untrusted_test

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/untrusted"
)

const secret = "aws_secret_access_key = AKIA-TETHER-TEST"

// What an agent can put where the worker reads, each refused with the
// typed error before a byte of it is read, and without blocking.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(outside, []byte(secret), 0o600))
	for name, plant := range map[string]func(dir, p string) error{
		"link to a secret":  func(_, p string) error { return os.Symlink(outside, p) },
		"link to /dev/zero": func(_, p string) error { return os.Symlink("/dev/zero", p) },
		"link inside":       func(dir, p string) error { return os.Symlink(filepath.Join(dir, "real"), p) },
		"fifo":              func(_, p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory":         func(_, p string) error { return os.Mkdir(p, 0o700) },
		"socket": func(_, p string) error {
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				return err
			}
			return syscall.Bind(fd, &syscall.SockaddrUnix{Name: p})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "real"), []byte("{}"), 0o600))
			require.NoError(t, plant(dir, filepath.Join(dir, "ask-user.json")))
			_, err := untrusted.ReadFile(dir, "ask-user.json", 1<<20)
			require.ErrorIs(t, err, agent.ErrUnsafeFile)
			assert.Equal(t, "UnsafeFile", agent.ErrorType(err))
			assert.NotContains(t, err.Error(), "AKIA")
		})
	}
}

// A path that climbs out of the directory, or through a directory the
// agent replaced with a link out of it, is refused.
func TestOpenStaysBelowItsDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte(secret), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "sessions")))
	for _, rel := range []string{"../" + filepath.Base(outside) + "/f", "sessions/f"} {
		_, err := untrusted.ReadFile(dir, rel, 1<<20)
		require.Error(t, err, rel)
		assert.NotContains(t, err.Error(), "AKIA")
	}
	_, err := untrusted.Rel(dir, filepath.Join(outside, "f"))
	require.ErrorIs(t, err, agent.ErrUnsafeFile)
}

func TestReadFileCapsWhatItReads(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o600))
	b, err := untrusted.ReadFile(dir, "f", 10)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(b))
	_, err = untrusted.ReadFile(dir, "f", 9)
	require.ErrorIs(t, err, agent.ErrUnsafeFile)
	_, err = untrusted.ReadFile(dir, "missing", 9)
	require.ErrorIs(t, err, os.ErrNotExist, "a file that is not there is absent, not unsafe")

	// A file that grows past the cap while it is read fails the read.
	f, err := untrusted.Open(dir, "f")
	require.NoError(t, err)
	defer f.Close()
	_, err = io.ReadAll(f.Limit(4))
	require.ErrorIs(t, err, agent.ErrUnsafeFile)
}

// A write replaces whatever the agent put at the name, and never writes
// through a directory the agent linked out of the root.
func TestWriteFileStaysBelowItsDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "target")
	require.NoError(t, os.WriteFile(target, []byte(secret), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "settings.json")))
	require.NoError(t, untrusted.WriteFile(dir, "settings.json", []byte("{}"), 0o600))
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, secret, string(b), "the link's target is untouched")
	fi, err := os.Lstat(filepath.Join(dir, "settings.json"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link was replaced by the file")

	require.NoError(t, os.Symlink(outside, filepath.Join(dir, ".gemini")))
	require.Error(t, untrusted.WriteFile(dir, ".gemini/tmp/x", []byte("x"), 0o600))
	_, err = os.Stat(filepath.Join(outside, "tmp"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written through the link")
}
