package config

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/version"
)

// A worker is versioned by default, in the deployment "tether", as the
// build its binary says; the Temporal Worker Controller's names serve as
// well as Tether's, and in its pods the worker leaves routing alone. A
// mode, a deployment or a build id Temporal would refuse is refused at
// start, with its variable named.
func TestVersioningSettings(t *testing.T) {
	for _, name := range []string{"TETHER_VERSIONING", "TETHER_DEPLOYMENT", "TETHER_BUILD_ID", "TEMPORAL_DEPLOYMENT_NAME", "TEMPORAL_WORKER_BUILD_ID"} {
		t.Setenv(name, "")
	}
	c := fromEnv(t)
	assert.Equal(t, Versioning{Mode: VersioningAuto, Deployment: "tether"}, c.Versioning)
	assert.Equal(t, version.BuildID(), c.Versioning.Build())

	t.Setenv("TETHER_VERSIONING", "off")
	assert.Equal(t, VersioningOff, fromEnv(t).Versioning.Mode)
	t.Setenv("TETHER_VERSIONING", "manual")
	t.Setenv("TETHER_BUILD_ID", "v1.2.3-3b88009a1b2c")
	c = fromEnv(t)
	assert.Equal(t, VersioningManual, c.Versioning.Mode)
	assert.Equal(t, "v1.2.3-3b88009a1b2c", c.Versioning.Build())

	t.Setenv("TETHER_VERSIONING", "")
	t.Setenv("TETHER_BUILD_ID", "")
	t.Setenv("TEMPORAL_DEPLOYMENT_NAME", "tether/agents")
	t.Setenv("TEMPORAL_WORKER_BUILD_ID", "5f9c2d")
	c = fromEnv(t)
	assert.Equal(t, Versioning{Mode: VersioningManual, Deployment: "tether/agents", BuildID: "5f9c2d"}, c.Versioning)

	refusedByName(t, map[string]string{
		"TETHER_VERSIONING": "sometimes",
		"TETHER_DEPLOYMENT": "tether.prod",
		"TETHER_BUILD_ID":   "v1:2",
	})
	t.Setenv("TETHER_BUILD_ID", "other")
	refused(t, "TEMPORAL_WORKER_BUILD_ID")
}
