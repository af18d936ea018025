package confine

import (
	"bytes"
	"errors"
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

// How often the helper measures what a visit wrote to the worker's disk:
// every diskEveryMin, and no more than a tenth of its time when the tree
// is large (up to diskEveryMax between two looks).
const (
	diskEveryMin = 250 * time.Millisecond
	diskEveryMax = 5 * time.Second
	// maxWalkDepth is as deep as a walk goes; a deeper directory cannot
	// be measured (a workspace snapshot refuses one far above it).
	maxWalkDepth = 256
)

// watchDisk holds the visit to its disk limit on the worker's own disk:
// what its processes add to dirs (its read-write paths, bound from the
// worker's disk) beyond what they held when it started, counted in the
// blocks the files take (a hard link once), with the files they still
// hold open after removing them. The visit's /tmp is bounded by its size
// instead. It ends the whole visit once the limit is passed, or when a
// directory stays unreadable to it for two looks running (a process
// could hide what it writes there). Between two looks a process can go
// over by what it writes in between.
func watchDisk(limit int64, dirs []string) {
	base, _ := diskUsed(dirs)
	every := diskEveryMin
	hidden := map[string]bool{}
	for {
		time.Sleep(every)
		began := time.Now()
		used, unreadable := diskUsed(dirs)
		if grown := used - base; grown > limit {
			end(fmt.Sprintf("the visit's processes wrote %d MiB to the worker's disk (their working directory, home, state and scratch), over the node's disk limit of %d MiB", grown>>20, limit>>20))
		}
		now := map[string]bool{}
		for _, d := range unreadable {
			if hidden[d] {
				end(fmt.Sprintf("the visit's processes made %s unreadable, so what they write there cannot be held to the node's disk limit", d))
			}
			now[d] = true
		}
		hidden = now
		every = min(max(10*time.Since(began), diskEveryMin), diskEveryMax)
	}
}

// fileID names an inode.
type fileID struct{ dev, ino uint64 }

// diskUsed is what the trees dirs take on disk, and the directories in
// them that could not be read.
func diskUsed(dirs []string) (used int64, unreadable []string) {
	w := &diskWalk{seen: map[fileID]bool{}, devs: map[uint64]bool{}}
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		w.devs[st.Dev] = true
		w.used += st.Blocks * 512
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.EACCES) {
				w.unreadable = append(w.unreadable, d)
			}
			continue
		}
		w.dir(fd, d, 0)
	}
	onFirstThread(w.removedButOpen)
	return w.used, w.unreadable
}

type diskWalk struct {
	used       int64
	unreadable []string
	seen       map[fileID]bool
	devs       map[uint64]bool
}

// dir adds up the directory open at fd (path names it, for a message),
// and closes fd. Nothing is followed: an entry swapped for a link between
// the look and the open is passed over.
func (w *diskWalk) dir(fd int, path string, depth int) {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			id := fileID{st.Dev, st.Ino}
			if w.seen[id] {
				continue
			}
			w.seen[id] = true
		}
		w.used += st.Blocks * 512
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub := filepath.Join(path, name)
		if depth >= maxWalkDepth {
			w.unreadable = append(w.unreadable, sub)
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.EACCES) {
				w.unreadable = append(w.unreadable, sub)
			}
			continue
		}
		w.dir(cfd, sub, depth+1)
	}
}

// removedButOpen adds the files on the watched trees' file systems that a
// process of the visit still holds open after removing them: they take
// the disk until closed, and no walk finds them. It runs on the helper's
// first thread (onFirstThread): following another process's descriptors
// takes the right to trace it, which Landlock grants only from the
// domain the program was started in.
func (w *diskWalk) removedButOpen() {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, _ := os.ReadDir(fdDir)
		for _, e := range fds {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(fdDir, e.Name()), &st); err != nil {
				continue
			}
			id := fileID{st.Dev, st.Ino}
			if st.Nlink != 0 || st.Mode&unix.S_IFMT != unix.S_IFREG || !w.devs[st.Dev] || w.seen[id] {
				continue
			}
			w.seen[id] = true
			w.used += st.Blocks * 512
		}
	}
}

// firstThread runs functions on the helper's first thread, locked to the
// goroutine that started the program (runAsInit), while it waits for it.
var firstThread = make(chan func())

// onFirstThread runs f on the helper's first thread and waits for it.
func onFirstThread(f func()) {
	done := make(chan struct{})
	firstThread <- func() {
		defer close(done)
		f()
	}
	<-done
}
