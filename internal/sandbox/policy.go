package sandbox

import (
	"context"
	"slices"
	"sync"

	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Policy is what one confined process may reach besides the system paths
// (confine.SystemPaths): RW paths it may read, write and execute, RO paths it may
// read and execute, and the network endpoints of Network.
type Policy struct {
	RW, RO []string
	// Tmp is mounted on /tmp for the program (LevelFull).
	Tmp string
	// Home is the program's HOME, as its user's entry in /etc/passwd
	// gives it.
	Home string
	// Dir is where the program starts: the run's workspace, where a
	// program may also come from (see Program).
	Dir string
	// Allow are the host:port patterns the process may reach through
	// the egress proxy; none cuts it off the network.
	Allow []hostport.Pattern
	// Proxy serves the egress proxy even when Allow is empty: whatever
	// the process tries is refused there and noted (an agent, whose
	// model the model relay carries, so that its output says what it
	// tried).
	Proxy bool
	// Limits bound the visit; zero fields take the sandbox's defaults.
	Limits Limits
	// Model, when set, is the worker's model relay for the visit
	// (LevelFull): its Unix socket, bound into the sandbox, and the
	// loopback address inside (ModelListen) the helper relays to it.
	Model ModelRelay
}

// ModelRelay is where a confined CLI reaches the worker's relay for its
// model endpoint: the helper listens at Listen on the sandbox's loopback
// and carries each connection, as it is, to the relay's Unix socket.
type ModelRelay struct {
	Socket, Listen string
}

// Limits bound what one visit's processes may use together (per process
// where the machine has no cgroup to give the visit, see docs/security.md).
type Limits struct {
	// MemoryBytes bounds memory; 0 is the default.
	MemoryBytes int64
	// Pids bounds processes and threads; 0 is the default.
	Pids int
	// CPU bounds CPU time to this many cores' worth; 0 is no bound.
	CPU float64
	// DiskBytes bounds what the visit writes: the size of its /tmp, and
	// what its processes add to the worker's disk through their
	// read-write paths (the working directory, home, state and scratch,
	// not the shared caches); 0 is the default.
	DiskBytes int64
}

// Default limits of a visit whose node sets none.
const (
	DefaultMemoryBytes = 8 << 30
	DefaultPids        = 4096
	DefaultDiskBytes   = 4 << 30
)

func (l Limits) orDefaults() Limits {
	l.MemoryBytes = treepolicy.OrDefault(l.MemoryBytes, DefaultMemoryBytes)
	l.Pids = treepolicy.OrDefault(l.Pids, DefaultPids)
	l.DiskBytes = treepolicy.OrDefault(l.DiskBytes, DefaultDiskBytes)
	return l
}

// with is l with each zero field taken from def.
func (l Limits) with(def Limits) Limits {
	l.MemoryBytes = treepolicy.OrDefault(l.MemoryBytes, def.MemoryBytes)
	l.Pids = treepolicy.OrDefault(l.Pids, def.Pids)
	l.CPU = treepolicy.OrDefault(l.CPU, def.CPU)
	l.DiskBytes = treepolicy.OrDefault(l.DiskBytes, def.DiskBytes)
	return l.orDefaults()
}

// Visit is what the worker knows of one visit when it starts a confined
// process for it: its node's network and limits. The activity puts it in
// the visit's context; the process runner reads it there and notes what
// the egress proxy refused.
type Visit struct {
	// Node names the node, for messages.
	Node string
	// Allow are the node's own host:port patterns; Model adds the
	// endpoints of the agent's model (an agent node's default).
	Allow []hostport.Pattern
	Model bool
	// Limits are the node's own; zero fields take the defaults.
	Limits Limits

	mu      sync.Mutex
	refused []string
}

type visitKey struct{}

// WithVisit returns ctx carrying v.
func WithVisit(ctx context.Context, v *Visit) context.Context {
	return context.WithValue(ctx, visitKey{}, v)
}

// VisitOf is the visit ctx carries, or nil.
func VisitOf(ctx context.Context) *Visit {
	v, _ := ctx.Value(visitKey{}).(*Visit)
	return v
}

// Allowed are the node's own host:port patterns (none for a nil v).
func (v *Visit) Allowed() []hostport.Pattern {
	if v == nil {
		return nil
	}
	return v.Allow
}

// Note records what the egress proxy refused during the visit.
func (v *Visit) Note(refused []string) {
	if v == nil || len(refused) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range refused {
		if !slices.Contains(v.refused, r) {
			v.refused = append(v.refused, r)
		}
	}
}

// Refused lists what was refused during the visit, once each.
func (v *Visit) Refused() []string {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.refused...)
}
