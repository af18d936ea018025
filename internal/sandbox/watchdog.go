package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// watchEvery is how often the helper adds up the visit's memory where no
// cgroup bounds it.
const watchEvery = 50 * time.Millisecond

// watchMemory is the memory limit of a visit without a cgroup: the helper,
// first process of the visit's PID namespace, adds up the anonymous
// resident memory of every process there and what the sandbox's /dev/shm
// holds, and ends the whole visit once that passes limit. Between two
// looks a process can go over by what it allocates in watchEvery.
func watchMemory(limit int64) {
	page := int64(os.Getpagesize())
	for range time.Tick(watchEvery) {
		used := shmUsed()
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "statm"))
			if err != nil {
				continue
			}
			f := bytes.Fields(b)
			if len(f) < 3 {
				continue
			}
			resident, _ := strconv.ParseInt(string(f[1]), 10, 64)
			shared, _ := strconv.ParseInt(string(f[2]), 10, 64)
			used += (resident - shared) * page
		}
		if used > limit {
			fmt.Fprintf(os.Stderr, "tether confine: the visit's processes used %d MiB of memory, over the node's limit of %d MiB: all of them were killed\n", used>>20, limit>>20)
			_ = unix.Kill(-1, unix.SIGKILL)
			os.Exit(128 + int(unix.SIGKILL))
		}
	}
}

// shmUsed is what the sandbox's /dev/shm holds.
func shmUsed() int64 {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}
