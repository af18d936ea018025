package main

import (
	"log/slog"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/workerhost"
)

// defaultBackends offers every known backend; the CLI ones are configured
// from the environment (config.Agents).
func defaultBackends(cfg config.Config, logger *slog.Logger) (activities.Backends, error) {
	bs, err := workerhost.NewBackends(workerhost.BackendConfigOf(cfg.Agents))
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
