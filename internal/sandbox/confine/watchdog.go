package confine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// watchEvery is how often the helper adds up the visit's memory and
// tasks where no cgroup bounds them.
const watchEvery = 50 * time.Millisecond

// helperTasks is the margin the helper's own threads take of a task
// limit (setLimits gives RLIMIT_NPROC the same).
const helperTasks = 64

// watch holds a visit without a cgroup to its limits (0 leaves one
// alone). The helper, first process of the visit's PID namespace, adds up
// every process there: their anonymous resident memory with what the
// sandbox's /dev/shm and /tmp hold (both in memory), and their tasks (processes and threads, as a
// cgroup's pids.max counts them). It ends the whole visit once either
// passes its limit; its exit, as the namespace's init, takes every
// process there with it. Between two looks a process can go over by what
// it allocates or forks in watchEvery. For a root worker this is the only
// bound on tasks: the kernel exempts its sandbox from RLIMIT_NPROC,
// because the sandbox's user is root outside it.
func watch(memLimit int64, taskLimit int) {
	for range time.Tick(watchEvery) {
		mem, tasks := usage(taskLimit > 0)
		switch {
		case memLimit > 0 && mem > memLimit:
			end(fmt.Sprintf("the visit's processes used %d MiB of memory, over the node's limit of %d MiB", mem>>20, memLimit>>20))
		case taskLimit > 0 && tasks > taskLimit+helperTasks:
			end(fmt.Sprintf("the visit ran %d processes and threads, over the node's limit of %d", tasks-helperTasks, taskLimit))
		}
	}
}

// end kills every process of the visit's PID namespace, after saying why.
func end(why string) {
	fmt.Fprintf(os.Stderr, "tether confine: %s: all of them were killed\n", why)
	_ = unix.Kill(-1, unix.SIGKILL)
	os.Exit(128 + int(unix.SIGKILL))
}

// usage adds up the memory of the PID namespace's processes and, when
// countTasks, their tasks.
func usage(countTasks bool) (mem int64, tasks int) {
	page := int64(os.Getpagesize())
	mem = tmpfsUsed("/dev/shm") + tmpfsUsed("/tmp")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if b, err := os.ReadFile(filepath.Join(dir, "statm")); err == nil {
			if f := bytes.Fields(b); len(f) >= 3 {
				resident, _ := strconv.ParseInt(string(f[1]), 10, 64)
				shared, _ := strconv.ParseInt(string(f[2]), 10, 64)
				mem += (resident - shared) * page
			}
		}
		if countTasks {
			tasks += threads(dir)
		}
	}
	return mem, tasks
}

// threads is the number of threads of the process whose /proc directory
// is dir (num_threads, the 20th field of its stat, after the command
// name, which may hold spaces and parentheses), or 1 when it cannot be
// read (a process that just ended still took its place).
func threads(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 1
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 18 {
		return 1
	}
	n, err := strconv.Atoi(string(f[17]))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// tmpfsUsed is what the sandbox's file system in memory at dir holds (0
// for one that is not in memory).
func tmpfsUsed(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}
