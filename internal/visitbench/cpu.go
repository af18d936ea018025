package visitbench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CPU is processor time (user and system), which a loaded machine
// stretches far less than wall time: what a run costs each process.
type CPU struct {
	// CLI is the `tether` command's own.
	CLI time.Duration
	// Worker is the worker process's own; Children its finished children's
	// (the sandbox and the agent CLI it ran).
	Worker, Children time.Duration
	// Server is the Temporal server's (the dev server, or the cluster's
	// server process; PostgreSQL and S3 are not counted).
	Server time.Duration
}

func (c CPU) sub(o CPU) CPU {
	return CPU{CLI: c.CLI - o.CLI, Worker: c.Worker - o.Worker, Children: c.Children - o.Children, Server: c.Server - o.Server}
}

func (c CPU) div(n int) CPU {
	if n == 0 {
		return c
	}
	d := time.Duration(n)
	return CPU{CLI: c.CLI / d, Worker: c.Worker / d, Children: c.Children / d, Server: c.Server / d}
}

// procCPU reads a process's own and its finished children's processor
// time from /proc (clock ticks of 10 ms).
func procCPU(pid int) (self, children time.Duration) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// The command name is in parentheses and may hold spaces.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	// After the name: state is field 3 of the whole line; utime is 14.
	if len(f) < 15 {
		return 0, 0
	}
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	return tick(11) + tick(12), tick(13) + tick(14)
}

// rusageCPU is a finished command's processor time, its waited-for
// descendants' included.
func rusageCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
