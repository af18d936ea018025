package e2e

import (
	"github.com/tether-run/tether/internal/workerhost"
)

// e2eVersioning is how the tests' workers join Temporal's worker
// deployments: not at all, on purpose. A versioned worker on a new dev
// server makes its build current first, and the server's first
// SetCurrentVersion waits 2-4 s for its own deployment workflows to start,
// which every one of the package's dev servers would pay; routing changes
// no code path of a run but the move to another build, which the upgrade
// tests (upgrade_test.go) and internal/workerhost's tests run on versioned
// workers, as the cluster's soak does. Worker processes the tests start
// are unversioned too (startWorkerProcess).
func e2eVersioning() workerhost.Versioning { return workerhost.Versioning{} }
