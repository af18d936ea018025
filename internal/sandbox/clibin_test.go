package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// Finding 7: with the CLIs in ~/.local/bin, the sandbox opened the bin
// directory's parent, and an agent read ~/.local/share/opencode/auth.json.
// Now only the bin directory and where its links lead are readable (a
// whole npm tree for a link into one), and a bin directory inside a home
// is refused at the worker's start.
func TestCLIBinOpensOnlyItsLinks(t *testing.T) {
	home := testenv.NobodyTempDir(t)
	local := filepath.Join(home, ".local")
	bin := filepath.Join(local, "bin")
	versions := filepath.Join(local, "share", "claude", "versions")
	npm := filepath.Join(local, "lib", "node_modules")
	auth := filepath.Join(local, "share", "opencode", "auth.json")
	for _, d := range []string{bin, versions, filepath.Join(npm, "opencode-ai", "bin"), filepath.Join(npm, "dep"), filepath.Dir(auth)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(auth, []byte(`{"key":"WORKER-OPENCODE-SECRET"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(versions, "2.1.0"), []byte("#!/bin/sh\necho claude-ran\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(npm, "opencode-ai", "bin", "opencode"), []byte("#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/../../dep/lib.txt\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(npm, "dep", "lib.txt"), []byte("hoisted-dep-read\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(versions, "2.1.0"), filepath.Join(bin, "claude")))
	require.NoError(t, os.Symlink("../lib/node_modules/opencode-ai/bin/opencode", filepath.Join(bin, "opencode")))

	readable := CLIBinReadable(bin)
	assert.ElementsMatch(t, []string{bin, filepath.Join(versions, "2.1.0"), npm}, readable)

	script := `"` + bin + `/claude"; "` + bin + `/opencode"; cat ` + auth + `; echo "auth=$?"`
	r := confined(t, full(t), Policy{RO: readable}, script)
	assert.Contains(t, r.out, "claude-ran", "a link's target runs")
	assert.Contains(t, r.out, "hoisted-dep-read", "an npm package reads its hoisted dependencies")
	assert.NotContains(t, r.out, "WORKER-OPENCODE-SECRET")
	assert.NotContains(t, r.out, "auth=0")
	// The control: the old rule, the bin directory's parent, opens it.
	old := confined(t, full(t), Policy{RO: []string{filepath.Dir(bin)}}, "cat "+auth)
	assert.Contains(t, old.out, "WORKER-OPENCODE-SECRET", "the old rule let the agent read it (the attack)")

	t.Setenv("HOME", home)
	err := CheckCLIBin(bin)
	require.ErrorIs(t, err, ErrCLIBinInHome)
	assert.Contains(t, err.Error(), "TETHER_CLI_BIN="+bin+" is inside the home directory "+home)
	assert.Contains(t, err.Error(), "install the CLIs outside any home")
	assert.NoError(t, CheckCLIBin(filepath.Join(testenv.NobodyTempDir(t), "bin")), "a bin directory elsewhere is fine")
	assert.NoError(t, CheckCLIBin(""))
	assert.ErrorIs(t, CheckCLIBin("/root/.local/bin"), ErrCLIBinInHome)
	assert.ErrorIs(t, CheckCLIBin("/home/dev/.local/bin"), ErrCLIBinInHome)
}

// The worker's Temporal client key must lie outside every path a
// confined process is given.
func TestSecretsOutsideTheSandbox(t *testing.T) {
	sb := &Sandbox{RO: []string{"/srv/shared"}, RW: []string{"/var/cache/go"}}
	for _, p := range []string{"/etc/tether/key.pem", "/srv/shared/tls/key.pem", "/var/cache/go/key.pem", "/usr/local/share/key.pem", "/work/runs/key.pem"} {
		assert.ErrorIs(t, sb.CheckOutside("TEMPORAL_TLS_KEY", p, "/work"), ErrExposed, p)
	}
	assert.NoError(t, sb.CheckOutside("TEMPORAL_TLS_KEY", "/var/lib/tether/tls/key.pem", "/work"))
	assert.NoError(t, sb.CheckOutside("TEMPORAL_TLS_KEY", ""))
	var off *Sandbox
	assert.NoError(t, off.CheckOutside("TEMPORAL_TLS_KEY", "/etc/key.pem"), "with the sandbox off nothing is confined anyway")
}
