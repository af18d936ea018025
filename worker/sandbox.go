package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/sandbox"
)

// confinement makes the worker's own environment unreadable to its
// children (they run as its user), builds the sandbox its agent CLIs and
// tool nodes run in, served by this very binary (sandbox.Subcommand), and
// says once which confinement is in force.
func confinement(cfg config.Config, logger *slog.Logger) (*sandbox.Sandbox, error) {
	if err := sandbox.HideEnviron(); err != nil {
		logger.Warn("the worker's environment stays readable to processes of its user", "err", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find this executable: %w", err)
	}
	sb, err := sandbox.New(cfg.Sandbox, []string{self, sandbox.Subcommand}, cfg.SandboxRW, cfg.SandboxRO)
	if err != nil {
		return nil, fmt.Errorf("TETHER_SANDBOX=%s: %w", cfg.Sandbox, err)
	}
	if sb == nil {
		logger.Warn("agents and tools run unconfined: they can read everything this worker's user can", "mode", cfg.Sandbox, "landlock_abi", sandbox.ABI())
		return nil, nil
	}
	logger.Info("agents and tools are confined", "sandbox", sb.String(), "extra_rw", sb.RW, "extra_ro", sb.RO)
	return sb, nil
}
