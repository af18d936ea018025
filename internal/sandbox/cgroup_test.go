package sandbox

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Where the worker has a delegated cgroup v2 (TETHER_TEST_CGROUP names
// one, or the test's own is), each visit gets a cgroup of its own that
// holds its memory and process limits and is gone after the visit. A
// machine without one (cgroup v1, or v2 without delegation) keeps the same
// limits with the helper instead, and the same visit must meet them.
func TestVisitCgroup(t *testing.T) {
	var c *cgroupParent
	var err error
	if dir := os.Getenv("TETHER_TEST_CGROUP"); dir != "" {
		c, err = useCgroup(dir)
	} else {
		c, err = ownCgroup()
	}
	sb := *full(t)
	if err != nil {
		t.Logf("no delegated cgroup v2 here (%v): the helper keeps the limits", err)
	} else {
		sb.cgroups = c
	}
	me := self(t)
	p := Policy{RO: []string{me}, Limits: Limits{MemoryBytes: 96 << 20, Pids: 32}}
	big := confinedProgram(t, &sb, p, me, []string{probeCommand, "alloc", "512"})
	if c == nil {
		// The helper's watchdog ends the visit over its memory, and over
		// its tasks: the kernel's RLIMIT_NPROC holds an unprivileged
		// worker's sandbox before the watchdog sees it, and exempts a
		// root worker's, which only the watchdog bounds.
		assert.Contains(t, big.out, "over the node's limit of 96 MiB", "the helper killed the visit over its memory")
		many := confined(t, &sb, p, `for i in $(seq 300); do sleep 30 & done; wait; echo all-started`)
		assert.NotContains(t, many.out, "all-started", "the helper bounds the processes")
		if os.Geteuid() == 0 {
			assert.Contains(t, many.out, "processes and threads, over the node's limit of 32", "the helper killed a root worker's visit over its tasks")
			assert.Equal(t, 128+9, many.code)
		}
		return
	}
	assert.True(t, big.oom, "the cgroup killed the visit over its memory: %s", big.out)
	many := confined(t, &sb, p, `for i in $(seq 60); do sleep 5 & done; wait; echo all-started`)
	assert.NotContains(t, many.out, "all-started", "the cgroup bounds the processes")
	ents, _ := os.ReadDir(c.dir)
	for _, e := range ents {
		assert.NotRegexp(t, `^visit-`, e.Name(), "a visit's cgroup outlived it")
	}
}
