package contracttest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// childEnv marks a test process started by AsNobody.
const childEnv = "SESSIONLOG_CONTRACT_CHILD"

// InChild reports whether this test process was started by AsNobody.
func InChild() bool { return os.Getenv(childEnv) == "1" }

// nobody is the conventional unprivileged uid and gid.
const nobody = 65534

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
	// The test binary lives in a directory only root can enter; copy it
	// where the unprivileged child can execute it.
	dir := WorldReadableTempDir(t)
	bin := filepath.Join(dir, "test.bin")
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatalf("copy test binary: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("cannot start an unprivileged child here (%v); EACCES is then covered by the injected-fault contract test only", err)
	}
	if err != nil {
		t.Fatalf("unprivileged child failed: %v\n%s", err, out)
	}
	t.Logf("unprivileged child:\n%s", out)
	return true
}

// WorldReadableTempDir is a temp dir (removed after the test) that an
// unprivileged child can enter.
func WorldReadableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sessionlog-child-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
