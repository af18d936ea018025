package config

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The configuration is read by tether as well as by the worker, and
// returns plain values: it links no executor, no packer engine and no
// MCP server, only the catalogue's facts.
func TestConfigLinksNoExecutor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/internal/config").CombinedOutput()
	require.NoError(t, err, "%s", out)
	const mod = "github.com/tether-run/tether/internal/"
	for _, d := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(d, mod+"backend")
		if ok && !strings.HasSuffix(rest, "/facts") && !strings.HasSuffix(rest, "/session") {
			t.Errorf("config links %s", d)
		}
		if d == mod+"packer" || d == mod+"askuser" || strings.HasPrefix(d, "github.com/modelcontextprotocol/") {
			t.Errorf("config links %s", d)
		}
	}
}
