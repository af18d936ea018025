package sessionlog_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The session layer has three storages behind one coordinator; the
// binaries link only the one they use. The scripted agent, in the worker,
// keeps its conversations in JSONL; the SQLite and in-memory storages serve
// the contract suite and their own tests, and neither binary links them
// (docs/architecture.md).
func TestBinariesLinkOnlyTheStorageTheyUse(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, bin := range []string{"worker", "starter"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/"+bin).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, unused := range []string{"internal/sessionlog/sqlite", "internal/sessionlog/memory", "modernc.org/sqlite"} {
			for _, d := range strings.Fields(string(out)) {
				if strings.HasSuffix(d, unused) || strings.HasPrefix(d, unused) {
					t.Errorf("%s links %s, which it never uses", bin, d)
				}
			}
		}
	}
}
