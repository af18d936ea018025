package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

// runWorkerChild runs the test named child, the worker half of a
// confinement test, in a process of its own with env added to its
// environment: as root (when the test runs as root) and as uid 65534, a
// subtest each, and requires it to pass. args go to the test binary run as
// root.
func runWorkerChild(t *testing.T, child string, env []string, args ...string) {
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the test does not run as root here")
		}
		self, err := os.Executable()
		require.NoError(t, err)
		argv := append([]string{"-test.run=^" + child + "$", "-test.v", "-test.count=1"}, args...)
		cmd := exec.CommandContext(t.Context(), self, argv...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "worker as root:\n%s", out)
		require.Contains(t, string(out), "--- PASS: "+child, "%s", out)
		t.Logf("worker as root:\n%s", out)
	})
	t.Run("nobody", func(t *testing.T) {
		out, err := testenv.RunAsNobody(t, child, env...)
		if err != nil {
			testenv.Unavailable(t, "cannot run the worker as uid %d: %v", testenv.Nobody, err)
		}
		require.Contains(t, string(out), "--- PASS: "+child, "%s", out)
	})
}

// childWorker is what the worker half of a confinement test runs, as
// tether-worker does: a client of the dev server, a file store and a temp
// dir under Base, the real CLIs' backends talking to the fake model, and a
// worker host, all confined by Sandbox (nil: unconfined).
type childWorker struct {
	ID                string // the worker's id, made unique per process
	Addr              string // the dev server's frontend
	Base              string
	StateDir, WorkDir string
	// Backends names CLIBin, AskUser and what else the test sets; its Vars,
	// TempDir and Sandbox are filled in.
	Backends backend.Config
	Sandbox  *sandbox.Sandbox
}

// start starts the worker, stopped at the end of the test, and returns its
// client and blob store.
func (o childWorker) start(t *testing.T, fake *fakemodel.Server) (client.Client, blob.Store) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: o.Addr, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	blobs, err := blob.Open(context.Background(), "file://"+filepath.Join(o.Base, "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	require.NoError(t, os.MkdirAll(filepath.Join(o.Base, "tmp"), 0o700))
	cfg := o.Backends
	cfg.Vars, cfg.TempDir, cfg.Sandbox = clitest.FakeVars(fake), filepath.Join(o.Base, "tmp"), o.Sandbox
	bs, err := backend.New(cfg)
	require.NoError(t, err)
	w, err := workerhost.Start(c, workerhost.Options{
		ID: fmt.Sprintf("%s-%d-%d", o.ID, os.Getuid(), time.Now().UnixNano()), Blobs: blobs, Backends: bs,
		StateDir: o.StateDir, WorkDir: o.WorkDir, Sandbox: o.Sandbox, Logger: testLogger(),
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return c, blobs
}
