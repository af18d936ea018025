package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// startEnv is the environment before any test changed HOME, so that a
// build uses the developer's Go caches instead of a cold empty one.
var startEnv = os.Environ()

// BuildCommand builds the command in the package directory pkg (relative
// to the module root, e.g. "internal/askuser/cmd/tether-ask-user") and
// returns the binary's path. It is built once per version of its sources:
// the Go files of pkg and of each directory in srcDirs, go.mod, go.sum and
// the Go version are hashed into the name of a directory under the system
// temp dir that every user can read and run from (tests run workers as
// uid 65534 too), so test binaries share one build and nothing piles up.
// Callers serialise their own calls; the rename makes concurrent test
// binaries safe. what names the command in a failure.
func BuildCommand(t testing.TB, what, pkg string, srcDirs ...string) string {
	t.Helper()
	root := Root()
	h := sha256.New()
	io.WriteString(h, runtime.Version())
	var srcs []string
	for _, d := range append([]string{pkg}, srcDirs...) {
		m, _ := filepath.Glob(filepath.Join(root, d, "*.go"))
		srcs = append(srcs, m...)
	}
	srcs = append(srcs, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("hash the %s's sources: %v", what, err)
		}
		h.Write(b)
	}
	name := filepath.Base(pkg)
	dir := filepath.Join(os.TempDir(), name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "./"+pkg)
	cmd.Dir = root
	cmd.Env = startEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the %s: %v\n%s", what, err, out)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		t.Fatal(err)
	}
	// Rename, so that a concurrent test binary never runs a half-written file.
	if err := os.Rename(tmp.Name(), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
