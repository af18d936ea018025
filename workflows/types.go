package workflows

import (
	"time"

	"github.com/tether-run/tether/internal/runapi"
)

// Bounds and timeouts of the workflow's own.
const (
	// maxVisitRestarts bounds how often one visit restarts because the
	// worker holding its session vanished.
	maxVisitRestarts = 3
	// maxLostWorkerRetries bounds how often the server starts a visit
	// again because its worker was lost (a visit that kills every worker
	// it lands on must end some time); lostWorkerRetryInterval is the
	// pause before each such start.
	maxLostWorkerRetries    = 10
	lostWorkerRetryInterval = 100 * time.Millisecond
	// startToCloseTimeout is the retry policy's name of a visit that ran
	// past its own time: never retried.
	startToCloseTimeout = "TemporalTimeout:StartToClose"
	// defaultToolTimeout bounds a tool visit whose node sets no timeout.
	defaultToolTimeout = 10 * time.Minute
	// importTimeout bounds the import of a run's workspace source.
	importTimeout = 30 * time.Minute
	// activityNotRegistered is the error type of an activity task that a
	// worker without the activity type was given.
	activityNotRegistered = "ActivityNotRegisteredError"
	// A branch visit that only workers of an older build were polling
	// for waits upgradeWait for an upgraded one, up to maxUpgradeWaits
	// times (ten minutes) before it fails.
	upgradeWait     = 10 * time.Second
	maxUpgradeWaits = 60
	// joinTimeout bounds a join's workspace work: measuring each branch's
	// change, and a merge.
	joinTimeout = 20 * time.Minute
	// joinPatience bounds a join's workspace work with all its attempts.
	joinPatience = time.Hour
	// checkpointTimeout bounds one attempt to save a checkpoint: longer
	// than the blob store's own retry of an outage (two minutes).
	checkpointTimeout = 150 * time.Second
	// visitOverhead is the time a visit may take beyond its node's
	// timeout: restoring and snapshotting the workspace and the session.
	visitOverhead = 10 * time.Minute
	// maxLoopSnapshots is how many earlier outputs of one node a run keeps.
	maxLoopSnapshots = 10
	// maxPathSteps is how many recent steps the checkpoint keeps; the
	// transitions list keeps every distinct edge taken.
	maxPathSteps = 200
	// maxAnsweredKept is how many questions a run remembers.
	maxAnsweredKept = 50
	// maxQueryValue is the largest string a state query shows in full.
	maxQueryValue = 2048
)

// withDefaults is o with each zero value set to its default.
func withDefaults(o runapi.Options) runapi.Options {
	o.ContinueAsNewEvents = positiveOr(o.ContinueAsNewEvents, runapi.DefaultContinueAsNewEvents)
	o.NodeTimeout = positiveOr(o.NodeTimeout, runapi.DefaultNodeTimeout)
	o.WorkerLostAfter = positiveOr(o.WorkerLostAfter, runapi.DefaultWorkerLostAfter)
	o.HeartbeatTimeout = positiveOr(o.HeartbeatTimeout, runapi.DefaultHeartbeatTimeout)
	if o.SessionHistory == 0 {
		o.SessionHistory = runapi.DefaultSessionHistory
	}
	return o
}

// positiveOr is v, or def when v is zero or negative.
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
