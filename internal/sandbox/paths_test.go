package sandbox

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sandbox/confine"
	"github.com/tether-run/tether/internal/testenv"
)

// A confined program is found the way the sandbox will see it, and only
// where the process may already read it: a name through ".." is refused
// whatever it leads to; a PATH directory the sandbox does not show is
// passed over (a shim there is not run); a link in the process's
// directory may lead into the system, not to a private file; a missing
// program is not-found, not refused; a program of the agent CLIs'
// installation brings the installation, never its parent.
func TestProgramIsFoundAsTheSandboxSeesIt(t *testing.T) {
	base := testenv.NobodyTempDir(t)
	dir, private, cli := filepath.Join(base, "run"), filepath.Join(base, "private"), filepath.Join(base, "opt", "clis", "bin")
	for _, d := range []string{dir, private, cli} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	script := []byte("#!/bin/sh\necho hi\n")
	for _, f := range []string{filepath.Join(private, "tool"), filepath.Join(private, "sh"), filepath.Join(dir, "own"), filepath.Join(cli, "agent")} {
		require.NoError(t, os.WriteFile(f, script, 0o755))
	}
	require.NoError(t, os.Symlink("/bin/true", filepath.Join(dir, "venv-true")))
	require.NoError(t, os.Symlink(filepath.Join(private, "tool"), filepath.Join(dir, "to-private")))
	require.NoError(t, os.Symlink(private, filepath.Join(dir, "privdir")))
	s := &Sandbox{Level: LevelFull, cli: CLIBinReadable(cli)}
	p := Policy{Dir: dir}
	path := "PATH=" + private + ":/usr/bin:/bin"

	got, err := s.Program(p, "sh", "", []string{path})
	require.NoError(t, err)
	assert.NotEqual(t, filepath.Join(private, "sh"), got, "the shim in a directory the sandbox does not show is passed over")
	_, err = s.Program(p, "tool", "", []string{path})
	assert.ErrorIs(t, err, ErrProgram, "found only where the sandbox does not show it: refused, saying where")
	assert.ErrorContains(t, err, filepath.Join(private, "tool"))
	_, err = s.Program(p, "no-such-program", "", []string{path})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	for name, want := range map[string]error{
		"./own": nil, "venv-true": nil, dir + "/venv-true": nil,
		"./to-private": ErrProgram, "privdir/tool": ErrProgram, dir + "/privdir/tool": ErrProgram,
		"privdir/../own": ErrProgram, dir + "/privdir/../run/own": ErrProgram,
		private + "/tool": ErrProgram, "/": fs.ErrNotExist, "./missing": fs.ErrNotExist,
	} {
		if name == "venv-true" {
			name = "./venv-true"
		}
		_, err := s.Program(p, name, "", nil)
		if want == nil {
			assert.NoError(t, err, name)
		} else {
			assert.ErrorIs(t, err, want, name)
		}
	}

	got, err = s.Program(p, "agent", cli, nil)
	require.NoError(t, err)
	binds, err := s.programFile(p, got)
	require.NoError(t, err)
	assert.Equal(t, []string{cli}, binds, "the installation, not its parent")
	binds, err = s.programFile(Policy{Dir: dir, RO: []string{cli}}, got)
	require.NoError(t, err)
	assert.Empty(t, binds, "read already: nothing more to bind")
}

// Finding 1's cousin among the other paths a process is given: a path
// that lies, by its text, in another one (XDG_CACHE_HOME in opencode's
// state root, which its agent writes) was bound where its link led, and a
// link an earlier visit planted there opened any directory, read-write.
// Now it is reached only through the path that holds it: the link leads
// nowhere inside. The root and the worker's own directories are never
// bound, whatever a path says.
func TestPathsAreNeverBoundThroughALink(t *testing.T) {
	base := testenv.NobodyTempDir(t)
	state, secret, work := filepath.Join(base, "state"), filepath.Join(base, "secret"), filepath.Join(base, "work")
	for _, d := range []string{state, secret, filepath.Join(work, "run-a")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(secret, "key"), []byte("PLANTED-LINK-SECRET"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(state, ".cache")))
	for _, lv := range levels(t) {
		t.Run(lv.name, func(t *testing.T) {
			r := confined(t, lv.sb, Policy{RW: []string{state, filepath.Join(state, ".cache")}, Dir: state}, `
cat `+state+`/.cache/key; echo "read=$?"
echo x > `+state+`/.cache/new; echo "write=$?"
echo own > `+state+`/own && echo own-written`)
			assert.Equal(t, 0, r.code, r.out)
			assert.NotContains(t, r.out, "PLANTED-LINK-SECRET")
			assert.NotContains(t, r.out, "read=0")
			assert.NotContains(t, r.out, "write=0")
			assert.Contains(t, r.out, "own-written", "the state root itself works")
			assert.NoFileExists(t, filepath.Join(secret, "new"))
		})
	}

	self, err := os.Executable()
	require.NoError(t, err)
	sb, err := New(context.Background(), Config{Mode: ModeFull, Helper: []string{self, confine.Subcommand}, Protected: []string{work}})
	if err != nil {
		testenv.Unavailable(t, "the full sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	for _, p := range []Policy{
		{RW: []string{"/"}}, {RO: []string{base}}, {RW: []string{work}}, {RW: []string{filepath.Join(base, "x", "..")}},
	} {
		_, err := sb.Launch(p, "/bin/true", nil, nil, &Visit{})
		assert.ErrorIs(t, err, ErrPath, "%+v", p)
	}
	l, err := sb.Launch(Policy{RW: []string{filepath.Join(work, "run-a")}}, "/bin/true", nil, nil, &Visit{})
	require.NoError(t, err, "a run's directory inside the work directory is fine")
	l.Finish()
	_, err = New(context.Background(), Config{Mode: ModeFull, Helper: []string{self, confine.Subcommand}, Protected: []string{work}, RO: []string{base}})
	assert.ErrorIs(t, err, ErrPath, "TETHER_SANDBOX_RO holding the work directory stops the worker at start")
}

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
