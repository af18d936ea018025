package activities

import "github.com/tether-run/tether/internal/agent"

// Backends is the set of backends a worker can run, looked up by name.
type Backends []agent.Backend

// Get returns the backend called name.
func (bs Backends) Get(name string) (agent.Backend, bool) {
	for _, b := range bs {
		if b.Name() == name {
			return b, true
		}
	}
	return nil, false
}

// Availability is implemented by backends that can tell, before running,
// whether they can run on this worker (a CLI that is not installed).
type Availability interface {
	Available() error
}
