package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox/mode"
)

// readSandbox reads the sandbox's settings: TETHER_SANDBOX,
// TETHER_SANDBOX_RW and TETHER_SANDBOX_RO (separated like PATH),
// TETHER_SANDBOX_DENY (the worker's other services, comma-separated
// host:port or name=host:port), TETHER_CGROUP and TETHER_WORKDIR_ROOTS
// (separated like PATH, each absolute and without "..").
func (c *Config) readSandbox() error {
	m, err := mode.Parse(getenv("TETHER_SANDBOX"))
	if err != nil {
		return fmt.Errorf("TETHER_SANDBOX=%q: %v", getenv("TETHER_SANDBOX"), err)
	}
	c.Sandbox = m
	c.SandboxRW = filepath.SplitList(getenv("TETHER_SANDBOX_RW"))
	c.SandboxRO = filepath.SplitList(getenv("TETHER_SANDBOX_RO"))
	c.Cgroup = env("TETHER_CGROUP", "auto")
	for _, r := range filepath.SplitList(getenv("TETHER_WORKDIR_ROOTS")) {
		if r == "" {
			continue
		}
		if !filepath.IsAbs(r) || slices.Contains(strings.Split(r, "/"), "..") || filepath.Clean(r) == "/" {
			return fmt.Errorf("TETHER_WORKDIR_ROOTS: %q: want absolute directories other than / and without \"..\", separated by %q", r, string(filepath.ListSeparator))
		}
		c.WorkdirRoots = append(c.WorkdirRoots, filepath.Clean(r))
	}
	for _, e := range strings.Split(getenv("TETHER_SANDBOX_DENY"), ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		name, addr, ok := strings.Cut(e, "=")
		if !ok {
			name, addr = "service "+e, e
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("TETHER_SANDBOX_DENY: %q: want host:port or name=host:port, comma-separated", e)
		}
		c.SandboxDeny = append(c.SandboxDeny, egress.Service{Name: name, Addr: addr})
	}
	return nil
}

// SandboxServices are the worker's own endpoints, which no confined
// process may reach whatever its node allows: the Temporal frontend (and
// its HTTP API, by Temporal's convention on the gRPC port + 10, where
// scripts/devserver.sh puts the dev server's), the Temporal Web UI
// (TETHER_UI), the console (TETHER_CONSOLE_URL), the S3 endpoint of the store, the metrics listener, the
// OTLP collector, and what TETHER_SANDBOX_DENY adds (PostgreSQL,
// Temporal's other services: scripts/devserver.sh writes the dev
// server's to .tether/temporal.env, which scripts/demo.sh passes on).
func (c Config) SandboxServices() []egress.Service {
	out := []egress.Service{{Name: "Temporal frontend", Addr: c.TemporalAddress}}
	if host, port, err := net.SplitHostPort(c.TemporalAddress); err == nil {
		if p, err := strconv.Atoi(port); err == nil && p+10 <= 65535 {
			out = append(out, egress.Service{Name: "Temporal frontend HTTP API", Addr: net.JoinHostPort(host, strconv.Itoa(p+10))})
		}
	}
	// The Web UI calls the frontend for whoever reaches it, and the
	// console answers and rewinds runs.
	if p, err := hostport.EndpointOf(c.UIAddress); err == nil {
		out = append(out, egress.Service{Name: "Temporal Web UI", Addr: p.String()})
	}
	if p, err := hostport.EndpointOf(c.ConsoleURL); err == nil && c.ConsoleURL != "" {
		out = append(out, egress.Service{Name: "Tether console", Addr: p.String()})
	}
	if u, err := url.Parse(c.BlobURL); err == nil && u.Scheme == "s3" {
		if ep := u.Query().Get("endpoint"); ep != "" {
			if p, err := hostport.EndpointOf(ep); err == nil {
				out = append(out, egress.Service{Name: "S3 endpoint", Addr: p.String()})
			}
		}
	}
	if c.MetricsAddr != "" {
		out = append(out, egress.Service{Name: "metrics listener", Addr: c.MetricsAddr})
	}
	if c.OTLPEndpoint != "" {
		if p, err := hostport.EndpointOf(c.OTLPEndpoint); err == nil {
			out = append(out, egress.Service{Name: "OpenTelemetry collector", Addr: p.String()})
		} else if _, _, err := net.SplitHostPort(c.OTLPEndpoint); err == nil {
			out = append(out, egress.Service{Name: "OpenTelemetry collector", Addr: c.OTLPEndpoint})
		}
	}
	return append(out, c.SandboxDeny...)
}
