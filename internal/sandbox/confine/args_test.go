package confine

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the worker writes is what the helper reads: every Args survives
// Argv then Parse, inside the namespaces and outside; a command line
// Argv never writes is refused, saying why.
func TestArgsRoundTrip(t *testing.T) {
	for name, a := range map[string]Args{
		"landlock alone": {RW: []string{"/run/a", "/tmp/b c"}, RO: []string{"/opt/clis"}, Command: []string{"/bin/sh", "-c", "echo -- --rw x"}},
		"program only":   {Command: []string{"/usr/bin/true"}},
		"probe":          {Inside: true, Probe: true, Command: []string{"/"}},
		"a visit": {
			Inside: true, ReadyFD: 4, RW: []string{"/work/run", "/tmp"}, RO: []string{"/opt/clis/bin"},
			Socket: "/run/tether/egress.sock", Proxy: "127.0.0.1:3128",
			Relays:      []Relay{{Listen: "127.0.0.2:443", Target: "api.example.com:443"}, {Listen: "[::1]:9000", Target: "[::1]:9000"}},
			ModelSocket: "/run/tether/model.sock", Model: "127.0.0.1:3127",
			Mem: 8 << 30, Tasks: 4096, Disk: 4 << 30, Watch: []string{"/work/run", "/state/runs/r/claude_code"},
			Command: []string{"/opt/clis/bin/claude", "-p", "--", "--inner"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(a.Argv())
			require.NoError(t, err, "%q", a.Argv())
			assert.Equal(t, a, got)
		})
	}
	for args, says := range map[string]string{
		"--rw":                              "needs a value",
		"-- sh":                             "absolute path",
		"--rw /a":                           "no program",
		"--mem 1 -- /bin/true":              "without --inner",
		"--inner --bogus x -- /bin/true":    "unknown flag --bogus",
		"--inner --mem lots -- /bin/true":   `--mem "lots"`,
		"--inner --relay nowhere -- /bin/x": "LISTEN=TARGET",
		"--probe -- /bin/true":              "without --inner",
	} {
		_, err := Parse(strings.Fields(args))
		assert.ErrorContains(t, err, says, args)
	}
}

// The helper links nothing of the worker: this package and the
// tether-confine command import no other package of the module.
func TestHelperLinksOnlyItself(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/internal/sandbox/cmd/tether-confine").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/tether-run/tether/") && d != "github.com/tether-run/tether/internal/sandbox/confine" && d != "github.com/tether-run/tether/internal/sandbox/cmd/tether-confine" {
			t.Errorf("tether-confine links %s", d)
		}
	}
}
