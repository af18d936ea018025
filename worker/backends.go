package main

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/sandbox"
)

// defaultBackends offers every known backend, configured from the
// environment (config.FromEnv), confined by sb, with ask_user served by
// askUserServer.
func defaultBackends(agents config.Agents, sb *sandbox.Sandbox, logger *slog.Logger) (activities.Backends, error) {
	cfg := backend.Config{CLIBin: agents.CLIBin, Vars: agents.Vars, PassEnv: agents.PassEnv, Redact: agents.Redact, Sandbox: sb}
	if self, err := os.Executable(); err == nil {
		cfg.AskUser = askUserServer(self)
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

// askUserServer is the argv base that starts the ask_user MCP server: the
// small server beside the worker's executable self (tether-ask-user,
// built by `make build`), which an agent CLI waits for before its first
// model call; else self's own subcommand (askuser.Subcommand in main),
// which initialises the whole worker binary for every visit first.
func askUserServer(self string) []string {
	small := filepath.Join(filepath.Dir(self), "tether-ask-user")
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return []string{small}
	}
	return []string{self, askuser.Subcommand}
}
