package conversation_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The console inside `tether` reads conversations through this package,
// and `tether` links no executor, packer engine, sandbox or MCP server:
// so neither does this package. It links no backend at all, nor the
// catalogue or the DSL: its caller hands it the transcript readers.
func TestLinksNothingOfTheWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/internal/conversation").CombinedOutput()
	require.NoError(t, err, "%s", out)
	const mod = "github.com/tether-run/tether/internal/"
	for _, d := range strings.Fields(string(out)) {
		for _, heavy := range []string{mod + "backend", mod + "catalogue", mod + "graph", mod + "packer", mod + "askuser", mod + "sandbox", mod + "sessionlog", "github.com/modelcontextprotocol/"} {
			if (d == heavy || strings.HasPrefix(d, heavy+"/")) && d != mod+"packer/archive" {
				t.Errorf("conversation links %s", d)
			}
		}
	}
}
