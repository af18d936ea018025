package main

import (
	"log/slog"
	"os"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/sandbox"
)

// defaultBackends offers every known backend, configured from the
// environment (config.FromEnv), confined by sb, with ask_user served by
// the small tether-ask-user beside this executable, which an agent CLI
// waits for before its first model call (else this binary's own
// subcommand, askuser.Subcommand in main).
func defaultBackends(agents config.Agents, sb *sandbox.Sandbox, logger *slog.Logger) (activities.Backends, error) {
	cfg := backend.Config{CLIBin: agents.CLIBin, Vars: agents.Vars, PassEnv: agents.PassEnv, Redact: agents.Redact, Sandbox: sb}
	if self, err := os.Executable(); err == nil {
		cfg.AskUser = besideSelf(self, "tether-ask-user", askuser.Subcommand)
	}
	bs, err := backend.New(cfg)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range bs {
		names = append(names, b.Name())
	}
	logger.Info("backends", "names", names)
	return bs, nil
}
