package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupParent is a cgroup v2 directory the worker may make visit cgroups
// in, with the memory and pids controllers (and cpu, when there) enabled
// for its children.
type cgroupParent struct {
	dir string
	cpu bool
}

// visitCgroup is one visit's cgroup.
type visitCgroup struct {
	dir string
	fd  int
}

// openCgroups finds where visit cgroups can be made. setting is "off", a
// directory (delegated to the worker by whoever runs it), or "auto": the
// worker's own cgroup, when it is delegated (writable), has the
// controllers, and is not the machine's root. In auto mode a worker alone
// in its cgroup moves itself into a leaf "worker" below it, since a cgroup
// v2 with processes cannot enable controllers for its children.
func openCgroups(setting string) (*cgroupParent, error) {
	switch setting {
	case "off":
		return nil, errors.New("TETHER_CGROUP=off")
	case "", "auto":
		return ownCgroup()
	}
	return useCgroup(setting)
}

// cgroupMount is where the cgroup v2 hierarchy is mounted ("" if not).
func cgroupMount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return ""
}

func ownCgroup() (*cgroupParent, error) {
	mnt := cgroupMount()
	if mnt == "" {
		return nil, errors.New("no cgroup v2 hierarchy is mounted")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var own string
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" || own == "/" {
		return nil, fmt.Errorf("the worker is in the root of the cgroup v2 hierarchy (%s), which it leaves alone; give it a delegated cgroup (systemd Delegate=yes) or name one in TETHER_CGROUP", mnt)
	}
	dir := filepath.Join(mnt, own)
	if err := unix.Access(filepath.Join(dir, "cgroup.subtree_control"), unix.W_OK); err != nil {
		return nil, fmt.Errorf("the worker's cgroup %s is not delegated to it", dir)
	}
	if missing := missingControllers(dir); len(missing) > 0 {
		return nil, fmt.Errorf("the worker's cgroup %s lacks the %s controller(s)", dir, strings.Join(missing, ", "))
	}
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if !strings.Contains(string(enabled), "memory") || !strings.Contains(string(enabled), "pids") {
		leaf := filepath.Join(dir, "worker")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return nil, fmt.Errorf("cgroup: move the worker into %s: %w", leaf, err)
		}
		if procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); len(strings.TrimSpace(string(procs))) > 0 {
			return nil, fmt.Errorf("the worker shares its cgroup %s with other processes; give it one of its own", dir)
		}
	}
	return useCgroup(dir)
}

// missingControllers are the controllers visit cgroups need that dir does
// not offer.
func missingControllers(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	have := strings.Fields(string(b))
	var missing []string
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	return missing
}

func useCgroup(dir string) (*cgroupParent, error) {
	if missing := missingControllers(dir); len(missing) > 0 {
		return nil, fmt.Errorf("cgroup %s lacks the %s controller(s)", dir, strings.Join(missing, ", "))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	cpu := slices.Contains(strings.Fields(string(b)), "cpu")
	want := "+memory +pids"
	if cpu {
		want += " +cpu"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(want), 0); err != nil {
		return nil, fmt.Errorf("cgroup %s: enable %s for visits: %w", dir, want, err)
	}
	return &cgroupParent{dir: dir, cpu: cpu}, nil
}

// create makes a visit's cgroup with lim, open for CLONE_INTO_CGROUP.
func (c *cgroupParent) create(lim Limits) (*visitCgroup, error) {
	dir, err := os.MkdirTemp(c.dir, "visit-")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	v := &visitCgroup{dir: dir, fd: -1}
	set := func(file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("cgroup %s: %s=%s: %w", dir, file, value, err)
		}
		return nil
	}
	steps := [][2]string{{"memory.max", strconv.FormatInt(lim.MemoryBytes, 10)}, {"pids.max", strconv.Itoa(lim.Pids)}}
	if exists(filepath.Join(dir, "memory.swap.max")) {
		steps = append(steps, [2]string{"memory.swap.max", "0"})
	}
	if c.cpu && lim.CPU > 0 {
		const period = 100000
		steps = append(steps, [2]string{"cpu.max", fmt.Sprintf("%d %d", int64(lim.CPU*period), period)})
	}
	for _, s := range steps {
		if err := set(s[0], s[1]); err != nil {
			v.remove()
			return nil, err
		}
	}
	if v.fd, err = unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		v.remove()
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return v, nil
}

// memoryEvents says how often the visit hit its memory limit and was
// killed for it.
func (v *visitCgroup) oomKills() int {
	b, _ := os.ReadFile(filepath.Join(v.dir, "memory.events"))
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			k, _ := strconv.Atoi(n)
			return k
		}
	}
	return 0
}

// remove kills whatever is left in the cgroup and removes it.
func (v *visitCgroup) remove() {
	if v.fd >= 0 {
		unix.Close(v.fd)
		v.fd = -1
	}
	if err := os.WriteFile(filepath.Join(v.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		// Before Linux 5.14: one by one.
		b, _ := os.ReadFile(filepath.Join(v.dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for i := 0; i < 200; i++ {
		if err := os.Remove(v.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
