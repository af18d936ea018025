package workerhost

import (
	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/backend/scripted"
)

// withBuiltins adds the backends that need no external program: the
// scripted agent.
func withBuiltins(bs activities.Backends, _ BackendConfig) (activities.Backends, error) {
	return append(activities.Backends{scripted.New(scripted.Options{})}, bs...), nil
}
