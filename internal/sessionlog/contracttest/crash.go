package contracttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// crashEnv carries a crash child's orders.
const crashEnv = "SESSIONLOG_CRASH_CHILD"

// crashCommitted is what a crash child prints when its batch committed
// before the crash point was reached.
const crashCommitted = "sessionlog crash child: batch committed"

// CrashPoint says where a crash child dies: just before its Step-th
// intercepted operation (counted from 1) or, when Op is set, just before
// the first operation named Op.
type CrashPoint struct {
	Step int
	Op   string
}

type crashOrders struct {
	At    CrashPoint
	Batch sessionlog.Batch
}

// CrashInChild runs b as one AppendBatch in a child copy of the test
// binary, which runs the test named child with env added to its
// environment. That test must call CrashChild, which dies by SIGKILL at the
// crash point: a real process death in the middle of a real write. It
// reports whether the child was killed; false means the batch committed
// before the crash point was reached. Any other end of the child fails t.
func CrashInChild(t *testing.T, child string, env []string, b sessionlog.Batch, at CrashPoint) bool {
	t.Helper()
	orders, err := json.Marshal(crashOrders{At: at, Batch: b})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), crashEnv+"="+string(orders))
	out, err := cmd.CombinedOutput()
	if err == nil {
		require.Contains(t, string(out), crashCommitted, "the crash child %s did not run", child)
		return false
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "crash child: %v\n%s", err, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
		"the crash child should die by SIGKILL at %+v, not end with %v:\n%s", at, err, out)
	return true
}

// CrashChild is the body of the child test that CrashInChild runs: it
// opens storage, intercepts its operations with intercept (the harness's
// Intercept) and appends the batch, killing its own process with SIGKILL at
// the crash point. In any other process it does nothing.
func CrashChild(t *testing.T, open func() (sessionlog.Storage, error), intercept func(sessionlog.Storage, func(op string) error)) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		return // not a crash child: CrashInChild runs this test
	}
	var o crashOrders
	require.NoError(t, json.Unmarshal([]byte(raw), &o))
	st, err := open()
	require.NoError(t, err)
	n := 0
	intercept(st, func(op string) error {
		n++
		if n == o.At.Step || op == o.At.Op {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			// The signal ends the process; never run on meanwhile.
			for {
				time.Sleep(time.Hour)
			}
		}
		return nil
	})
	require.NoError(t, st.AppendBatch(context.Background(), o.Batch))
	fmt.Println(crashCommitted)
}
