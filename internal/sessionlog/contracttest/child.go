package contracttest

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/testenv"
)

// InChild reports whether this test process was started by AsNobody.
func InChild() bool { return testenv.InNobodyChild() }

// AsNobody re-runs the current test (t.Name()) in a child copy of the test
// binary with uid and gid 65534, passing env, and fails t if the child
// fails. Permission bits do not bind root, so this is how a real EACCES is
// produced when the suite runs as root. It returns false, without running
// anything, when the process is not root (the caller then meets EACCES
// itself).
func AsNobody(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if _, err := testenv.RunAsNobody(t, t.Name(), env...); err != nil {
		testenv.Unavailable(t, "cannot start an unprivileged child here (%v); EACCES is then covered by the injected-fault contract test only", err)
	}
	return true
}

// WorldReadableTempDir is a temp dir (removed after the test) that an
// unprivileged child can enter.
func WorldReadableTempDir(t *testing.T) string {
	t.Helper()
	return testenv.NobodyTempDir(t)
}
