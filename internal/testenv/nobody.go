package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the conventional unprivileged uid and gid that RunAsNobody
// drops to.
const Nobody = 65534

// nobodyChildEnv marks a test process started by RunAsNobody.
const nobodyChildEnv = "TETHER_TESTENV_NOBODY_CHILD"

// InNobodyChild reports whether this test process was started by
// RunAsNobody.
func InNobodyChild() bool { return os.Getenv(nobodyChildEnv) == "1" }

// NobodyTempDir is a temporary directory (removed after the test) that
// uid 65534 can enter.
func NobodyTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tether-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunAsNobody runs the test testName (matched as ^testName$) in a copy of
// the current test binary with uid and gid 65534, with env added to this
// process's environment and InNobodyChild true. Permission bits do not
// bind root, so this is how a test running as root meets a real EACCES.
// The copy sits in a NobodyTempDir, since the original test binary lives
// in a build directory only root can enter; the child runs there.
//
// A child that fails fails t, with its output. On success RunAsNobody logs
// and returns the child's combined output. A child that cannot be started
// at all (typically because changing uid is not permitted here) returns a
// non-nil error and leaves to the caller whether that skips or fails.
func RunAsNobody(t testing.TB, testName string, env ...string) ([]byte, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := NobodyTempDir(t)
	bin := filepath.Join(dir, filepath.Base(self))
	if err := copyExecutable(self, bin); err != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run=^"+testName+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), nobodyChildEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return out, fmt.Errorf("run the test binary as uid %d: %w", Nobody, err)
	}
	if err != nil {
		t.Fatalf("child as uid %d failed: %v\n%s", Nobody, err, out)
	}
	t.Logf("child as uid %d:\n%s", Nobody, out)
	return out, nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
