package soak

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuUse is the processor time (user and system) each part of the
// topology has used so far: the Temporal server, its database
// (PostgreSQL's processes together), the S3 server, the Tether workers
// together, and this process (the floor's worker and the clients).
type cpuUse map[string]time.Duration

// cpuNow reads it from /proc.
func (s *Soak) cpuNow() cpuUse {
	use := cpuUse{"soak": procCPU(os.Getpid())}
	if d := s.o.Dev; d != nil {
		if d.server != nil {
			use["temporal"] = procCPU(d.server.Pid)
		}
		if d.worker != nil && d.worker.Process != nil {
			use["workers"] = procCPU(d.worker.Process.Pid)
		}
		return use
	}
	run := filepath.Join(s.o.ClusterDir, "run")
	use["temporal"] = procCPU(pidIn(filepath.Join(run, "temporal.pid")))
	use["s3"] = procCPU(pidIn(filepath.Join(run, "s3.pid")))
	for i := 1; i <= s.o.Workers; i++ {
		use["workers"] += procCPU(pidIn(filepath.Join(run, fmt.Sprintf("worker-%d.pid", i))))
	}
	if pg := postmaster(s.o.ClusterDir); pg > 0 {
		use["postgres"] = procCPU(pg) + childrenCPU(pg)
	}
	return use
}

// perVisit is what was used between two readings, per visit.
func (a cpuUse) perVisit(before cpuUse, visits int) cpuUse {
	out := cpuUse{}
	for k, v := range a {
		out[k] = (v - before[k]) / time.Duration(max(visits, 1))
	}
	return out
}

func (a cpuUse) String() string {
	var parts []string
	var total time.Duration
	for _, k := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(a[k].Microseconds())/1000))
		total += a[k]
	}
	return fmt.Sprintf("%.1f ms CPU (%s)", float64(total.Microseconds())/1000, strings.Join(parts, ", "))
}

// postmaster is the PostgreSQL server's pid, from its data directory
// (under the cluster directory, or where postgres.path says).
func postmaster(clusterDir string) int {
	data := filepath.Join(clusterDir, "postgres", "data")
	if b, err := os.ReadFile(filepath.Join(clusterDir, "postgres.path")); err == nil {
		data = strings.TrimSpace(string(b))
	}
	return pidIn(filepath.Join(data, "postmaster.pid"))
}

// pidIn reads the pid on a file's first line.
func pidIn(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// procCPU is a process's own processor time (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 15 {
		return 0
	}
	return tick(f[11]) + tick(f[12])
}

// childrenCPU sums the processor time of pid's living children (a
// database's backends, one per connection).
func childrenCPU(pid int) time.Duration {
	entries, _ := os.ReadDir("/proc")
	var sum time.Duration
	want := strconv.Itoa(pid)
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(child); len(f) >= 15 && f[1] == want {
			sum += tick(f[11]) + tick(f[12])
		}
	}
	return sum
}

// procStat is /proc/PID/stat's fields after the command name: state
// first, then ppid, …, utime at 11, stime at 12.
func procStat(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	return strings.Fields(s)
}

func tick(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n) * 10 * time.Millisecond
}
