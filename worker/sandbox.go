package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/confine"
)

// confinement makes the worker's own environment unreadable to its
// children, refuses a CLI bin directory inside a home, builds the sandbox
// its agent CLIs and tool nodes run in, and says once which confinement
// is in force and what that means for the nodes it runs.
func confinement(ctx context.Context, cfg config.Config, logger *slog.Logger) (*sandbox.Sandbox, error) {
	if err := sandbox.HideEnviron(); err != nil {
		logger.Warn("the worker's environment stays readable to processes of its user", "err", err)
	}
	if err := sandbox.CheckCLIBin(cfg.Agents.CLIBin); err != nil {
		return nil, err
	}
	helper, err := confineHelper()
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(ctx, sandbox.Config{
		Mode: cfg.Sandbox, Helper: helper, RW: cfg.SandboxRW, RO: cfg.SandboxRO,
		CLIBin: cfg.Agents.CLIBin, Protected: []string{cfg.StateDir, cfg.WorkDir},
		Services: cfg.SandboxServices(), Cgroup: cfg.Cgroup, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("TETHER_SANDBOX=%s: %w", cfg.Sandbox, err)
	}
	// The frontend's client key and certificate prove the worker to the
	// cluster: no agent may read them.
	var cliDirs []string
	if cfg.Agents.CLIBin != "" {
		cliDirs = sandbox.CLIBinReadable(cfg.Agents.CLIBin)
	}
	for _, f := range []struct{ name, path string }{{"TEMPORAL_TLS_KEY", cfg.TemporalTLS.KeyFile}, {"TEMPORAL_TLS_CERT", cfg.TemporalTLS.CertFile}} {
		if err := sb.CheckOutside(f.name, f.path, append([]string{cfg.WorkDir, cfg.StateDir}, cliDirs...)...); err != nil {
			return nil, err
		}
	}
	switch {
	case sb == nil:
		logger.Warn("TETHER_SANDBOX=off: agents and tools run unconfined: they can read everything this worker's user can and reach every network endpoint it can")
	case sb.Level < sandbox.LevelFull:
		logger.Warn("agents and tools are confined with less than the full sandbox: no network confinement, no private /proc, /dev or IPC; nodes with permissions: full or a network: setting are refused (TETHER_SANDBOX=off runs them unconfined)",
			"sandbox", sb.String(), "why", sb.Why)
	default:
		logger.Info("agents and tools are confined", "sandbox", sb.String(), "helper", helper[0], "extra_rw", sb.RW, "extra_ro", sb.RO)
	}
	return sb, nil
}

// confineHelper is the small helper beside this executable
// (tether-confine, built by `make build`), which starts in milliseconds;
// else this executable's own confine subcommand, which re-initialises the
// whole worker binary for every confined process.
func confineHelper() ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find this executable: %w", err)
	}
	return besideSelf(self, "tether-confine", confine.Subcommand), nil
}

// besideSelf is the argv base of a helper the worker's executable self
// also serves as a subcommand: the small binary name beside self (built
// by `make build`, in the image), when it is there and executable; else
// self's own subcommand, which initialises the whole worker binary first.
func besideSelf(self, name, subcommand string) []string {
	small := filepath.Join(filepath.Dir(self), name)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return []string{small}
	}
	return []string{self, subcommand}
}
