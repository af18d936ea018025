package e2e

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/sandbox"
)

// The test binary is its workers' confine helper, as tether-worker is its
// own (`tether-worker confine`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Subcommand {
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}
