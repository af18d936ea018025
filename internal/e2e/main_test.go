package e2e

import (
	"os"
	"testing"

	"github.com/tether-run/tether/internal/sandbox/confine"
)

// The test binary is its workers' confine helper, as tether-worker is its
// own (`tether-worker confine`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		os.Exit(confine.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}
