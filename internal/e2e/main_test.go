package e2e

import (
	"os"
	"sync"
	"testing"

	"github.com/tether-run/tether/internal/sandbox/confine"
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

// builtIn makes a directory for a binary built once, removed when the
// tests end.
func builtIn(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	builtMu.Lock()
	built = append(built, dir)
	builtMu.Unlock()
	return dir, nil
}
