package main

import (
	"log/slog"
	"os"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend"
)

// defaultBackends offers every known backend, configured from the
// environment (config.FromEnv), with ask_user served by this very binary
// (see askuser.Subcommand in main).
func defaultBackends(cfg backend.Config, logger *slog.Logger) (activities.Backends, error) {
	if self, err := os.Executable(); err == nil {
		cfg.AskUser = []string{self, askuser.Subcommand}
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
