package config

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/egress"
)

// The worker's own services, which no confined process may reach, come
// from its configuration (the Web UI and the console from their
// addresses) and TETHER_SANDBOX_DENY; a malformed entry names the
// variable.
func TestSandboxServices(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	t.Setenv("TETHER_UI", "http://temporal-ui:8080/")
	t.Setenv("TETHER_CONSOLE_URL", "https://tether.example.com/")
	t.Setenv("TETHER_BLOB_URL", "s3://b/p?endpoint=http://s3:7070&region=us-east-1")
	t.Setenv("TETHER_METRICS_ADDR", ":9464")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318")
	t.Setenv("TETHER_SANDBOX", "full")
	t.Setenv("TETHER_SANDBOX_DENY", "postgresql=db:5432, 10.0.0.9:9000")
	t.Setenv("TETHER_CGROUP", "")
	c := fromEnv(t)
	assert.Equal(t, "full", c.Sandbox)
	assert.Equal(t, "auto", c.Cgroup)
	assert.Equal(t, []egress.Service{
		{Name: "Temporal frontend", Addr: "temporal:7233"},
		{Name: "Temporal frontend HTTP API", Addr: "temporal:7243"},
		{Name: "Temporal Web UI", Addr: "temporal-ui:8080"},
		{Name: "Tether console", Addr: "tether.example.com:443"},
		{Name: "S3 endpoint", Addr: "s3:7070"},
		{Name: "metrics listener", Addr: ":9464"},
		{Name: "OpenTelemetry collector", Addr: "otel:4318"},
		{Name: "postgresql", Addr: "db:5432"},
		{Name: "service 10.0.0.9:9000", Addr: "10.0.0.9:9000"},
	}, c.SandboxServices())

	t.Setenv("TETHER_SANDBOX_DENY", "db")
	refused(t, "TETHER_SANDBOX_DENY")
	t.Setenv("TETHER_SANDBOX_DENY", "")
	t.Setenv("TETHER_SANDBOX", "bwrap")
	refused(t, "TETHER_SANDBOX")
}

// An absolute workdir runs only below the roots TETHER_WORKDIR_ROOTS
// names: none by default; a root that is not absolute, holds ".." or is
// / is refused, naming the variable.
func TestWorkdirRoots(t *testing.T) {
	t.Setenv("TETHER_WORKDIR_ROOTS", "")
	assert.Empty(t, fromEnv(t).WorkdirRoots)
	t.Setenv("TETHER_WORKDIR_ROOTS", "/srv/checkouts:/data/work/")
	assert.Equal(t, []string{"/srv/checkouts", "/data/work"}, fromEnv(t).WorkdirRoots)
	for _, bad := range []string{"checkouts", "/srv/../root", "/"} {
		t.Setenv("TETHER_WORKDIR_ROOTS", bad)
		_, err := FromEnv()
		assert.ErrorContains(t, err, "TETHER_WORKDIR_ROOTS", bad)
	}
}
