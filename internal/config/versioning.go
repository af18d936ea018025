package config

import (
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/version"
)

// Versioning is how the worker joins Temporal's worker deployments
// (docs/operations.md, "Upgrades"), and which deployment `tether workers`
// and `tether upgrade-runs` look at.
type Versioning struct {
	// Mode is TETHER_VERSIONING: VersioningAuto (the default), VersioningManual
	// or VersioningOff.
	Mode string
	// Deployment is TETHER_DEPLOYMENT (default runapi.DefaultDeployment).
	Deployment string
	// BuildID is TETHER_BUILD_ID (default version.BuildID(): the
	// binary's version and revision).
	BuildID string
}

// The values of TETHER_VERSIONING.
const (
	// VersioningAuto (the default, but in a pod of the Temporal Worker
	// Controller, which sets TEMPORAL_DEPLOYMENT_NAME): a versioned
	// worker, which also makes its build the
	// deployment's current one when the deployment has none, or when no
	// worker of the current build polls any more (a fresh server, a
	// rebuilt dev worker), so that new runs are never left without a
	// worker. A rollout to a deployment that has a live current build is
	// the operator's: ramp, set current (scripts/cluster.sh upgrade).
	VersioningAuto = "auto"
	// VersioningManual: a versioned worker that never changes the
	// deployment's routing (a Temporal Worker Controller, or a team that
	// sets every current version by hand, does).
	VersioningManual = "manual"
	// VersioningOff: an unversioned worker, for a Temporal server without
	// worker deployments (before 1.28) or a fleet not migrated yet.
	VersioningOff = "off"
)

// readVersioning reads TETHER_VERSIONING, TETHER_DEPLOYMENT and
// TETHER_BUILD_ID.
func (c *Config) readVersioning() error {
	v := Versioning{Mode: strings.ToLower(strings.TrimSpace(getenv("TETHER_VERSIONING")))}
	var err error
	// The Temporal Worker Controller gives each worker pod its deployment
	// and build under names of its own; either name serves.
	if v.Deployment, err = oneOf("TETHER_DEPLOYMENT", "TEMPORAL_DEPLOYMENT_NAME"); err != nil {
		return err
	}
	if v.BuildID, err = oneOf("TETHER_BUILD_ID", "TEMPORAL_WORKER_BUILD_ID"); err != nil {
		return err
	}
	switch v.Mode {
	case "":
		// A pod of the Worker Controller: the controller sets the
		// current build, the worker never does.
		v.Mode = VersioningAuto
		if strings.TrimSpace(getenv("TEMPORAL_DEPLOYMENT_NAME")) != "" {
			v.Mode = VersioningManual
		}
	case "on", "true", "1":
		v.Mode = VersioningAuto
	case VersioningAuto, VersioningManual:
	case VersioningOff, "false", "0":
		v.Mode = VersioningOff
	default:
		return fmt.Errorf("TETHER_VERSIONING=%q: want auto (the default), manual or off", v.Mode)
	}
	if v.Deployment == "" {
		v.Deployment = runapi.DefaultDeployment
	}
	if !version.ValidDeployment(v.Deployment) {
		return fmt.Errorf("TETHER_DEPLOYMENT=%q: want letters, digits, '_', '-' and '/' (Temporal refuses '.' and ':' in a deployment's name)", v.Deployment)
	}
	if v.BuildID != "" && !version.ValidBuildID(v.BuildID) {
		return fmt.Errorf("TETHER_BUILD_ID=%q: want letters, digits, '.', '_', '+' and '-', starting with a letter or digit, at most %d characters", v.BuildID, version.MaxBuildID)
	}
	c.Versioning = v
	return nil
}

// oneOf reads a setting that has two names: the value of whichever is
// set, and an error naming both when they disagree.
func oneOf(ours, theirs string) (string, error) {
	a, b := strings.TrimSpace(getenv(ours)), strings.TrimSpace(getenv(theirs))
	if a != "" && b != "" && a != b {
		return "", fmt.Errorf("%s=%q and %s=%q name different values; set one of them", ours, a, theirs, b)
	}
	if a == "" {
		a = b
	}
	return a, nil
}

// Build is the build id the worker registers: TETHER_BUILD_ID, else the
// binary's own (version.BuildID).
func (v Versioning) Build() string {
	if v.BuildID != "" {
		return v.BuildID
	}
	return version.BuildID()
}
