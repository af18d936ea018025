package runapi

import (
	"fmt"
	"time"
)

// Tether's workers are Temporal worker deployment versions: every worker
// registers as build BuildID of deployment Deployment (TETHER_DEPLOYMENT,
// TETHER_BUILD_ID), GraphRun is pinned to the build it started on, and a
// run moves to the deployment's current build only between two visits or
// while it waits for a person, by continuing as new (docs/operations.md,
// "Upgrades").
const (
	// DefaultDeployment is the worker deployment Tether's workers join
	// unless TETHER_DEPLOYMENT names another.
	DefaultDeployment = "tether"
	// SignalUpgrade asks a run to check, now, whether its deployment
	// still routes runs to its build, and to move to the current build if
	// not. A run checks by itself between two visits; a run that waits
	// for a person checks when it is asked (`tether upgrade-runs`). The
	// signal carries nothing: which build is current is what the worker
	// running the run reads from Temporal, never what a sender says.
	SignalUpgrade = "upgrade"
)

// Move is why an execution of a run began: the run continued as new to
// leave build From of its worker deployment for build To, the
// deployment's current one. The new execution pins itself to To before it
// does anything else (workflows, move.go).
type Move struct {
	Deployment string `json:"deployment"`
	From       string `json:"from"`
	To         string `json:"to"`
	// Reason is the sentence the history and the logs show.
	Reason string `json:"reason"`
	// Since is when To became current, as the worker that decided the
	// move read it: the new execution never acts on an older routing.
	Since time.Time `json:"since,omitzero"`
}

// Upgrade is what the upgrade signal carries: the routing of Tether's task
// queue as its sender read it (`tether upgrade-runs`). A run never moves
// because of it: it only waits, a few seconds at most, for its own worker
// to have read a routing at least as new before it decides.
type Upgrade struct {
	Current string    `json:"current,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// DeploymentVersion is a worker deployment version as Temporal writes it
// ("tether:v1.2.3-3b88009a1b2c"): the TemporalWorkerDeploymentVersion
// search attribute holds it.
func DeploymentVersion(deployment, build string) string {
	return deployment + ":" + build
}

// PinnedQuery is the visibility query of the open GraphRun executions
// pinned to build of deployment: Temporal's BuildIds search attribute
// holds "pinned:<deployment>:<build>" for them (it is what the server
// itself counts to call a version drained).
func PinnedQuery(deployment, build string) string {
	return fmt.Sprintf(`WorkflowType = %q AND ExecutionStatus = "Running" AND BuildIds = %q`,
		WorkflowType, "pinned:"+DeploymentVersion(deployment, build))
}
