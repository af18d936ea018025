package workflows

import (
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

// loadTolerant lets a workflow task run up to a minute before the test
// environment calls it a deadlock (1 s by default): on a busy machine a
// task that does nothing wrong can be starved that long, and the test
// must not fail for it. A real deadlock still fails the test.
func loadTolerant(env *testsuite.TestWorkflowEnvironment) *testsuite.TestWorkflowEnvironment {
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	// The test environment's own bound on a workflow (3 s of wall clock by
	// default) is a quiet machine's; builds beside the tests exceed it.
	env.SetTestTimeout(2 * time.Minute)
	return env
}
