package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether-run/tether/internal/sandbox/confine"
	"github.com/tether-run/tether/internal/testenv"
)

// The test binary is its workers' confine helper, as tether-worker is its
// own (`tether-worker confine`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		os.Exit(confine.Main(os.Args[2:]))
	}
	code := m.Run()
	// The directories of the binaries built once for every test.
	builtMu.Lock()
	for _, dir := range built {
		os.RemoveAll(dir)
	}
	builtMu.Unlock()
	os.Exit(code)
}

// built are the directories of the binaries built once per test binary
// (workerBin, tetherBin), removed when the tests end.
var (
	builtMu sync.Mutex
	built   []string
)

// buildOnce returns what builds the command in the module's directory pkg,
// as name, into a directory of its own once per test binary (removed when
// the tests end), with the environment the tests started with: a test's
// HOME is fresh, and a build cache there would build everything again.
func buildOnce(name, pkg string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", name+"-*")
		if err != nil {
			return "", err
		}
		builtMu.Lock()
		built = append(built, dir)
		builtMu.Unlock()
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", bin, filepath.Join(testenv.Root(), pkg))
		cmd.Env = startEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./%s: %v: %s", pkg, err, out)
		}
		return bin, nil
	})
}
