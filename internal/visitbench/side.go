package visitbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/temporalclient"
)

// side is one build under measure: its repository (bin/ built, the
// scripts it ships), the Temporal server its runs go to, and its worker.
type side struct {
	name string
	root string
	dir  string // scratch: the server's, the worker's and the CLI's homes
	// graph is the graph file the side runs.
	graph string
	// env is what the CLI and the worker are given to reach Temporal and
	// the store (TEMPORAL_*, TETHER_BLOB_URL, TLS, AWS_*).
	env    map[string]string
	server *os.Process
	worker *exec.Cmd
	c      client.Client
	// workers are the cluster's own workers, restarted with the bench's
	// environment (cluster mode); the side starts none of its own.
	clusterWorkers int
	clusterDir     string
	// The file each process logs to.
	logs []string
}

// startDevServer starts the dev server `make run` starts, with the side's
// own scripts/devserver.sh: SQLite, and the settings that script ships.
func (s *side) startDevServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	ui, err := freePort()
	if err != nil {
		return err
	}
	home := filepath.Join(s.dir, "server")
	s.server, err = StartServer(ctx, s.root, "TETHER_HOME="+home, "TEMPORAL_PORT="+strconv.Itoa(port), "TEMPORAL_UI_PORT="+strconv.Itoa(ui))
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.logs = append(s.logs, filepath.Join(home, "temporal.log"))
	s.env = map[string]string{
		"TEMPORAL_ADDRESS":   "127.0.0.1:" + strconv.Itoa(port),
		"TEMPORAL_NAMESPACE": "default",
		"TETHER_BLOB_URL":    "file://" + filepath.Join(s.dir, "store"),
	}
	return s.dial()
}

// useCluster points the side at the cluster scripts/cluster.sh runs (it
// must be up), whose workers it restarts with the bench's environment.
func (s *side) useCluster(ctx context.Context, clusterDir string, workers int) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", `eval "$(bash "$0" env)" && env`, filepath.Join(s.root, "scripts", "cluster.sh"))
	cmd.Env = append(os.Environ(), "TETHER_CLUSTER_DIR="+clusterDir)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("scripts/cluster.sh env: %w (is the cluster up? make cluster)", err)
	}
	s.env = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && (strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "AWS_") || k == "TETHER_BLOB_URL" || k == "TETHER_CHECKPOINT_KEY") {
			s.env[k] = v
		}
	}
	s.clusterDir, s.clusterWorkers = clusterDir, workers
	for i := 1; i <= workers; i++ {
		s.logs = append(s.logs, filepath.Join(clusterDir, "log", fmt.Sprintf("worker-%d.log", i)))
	}
	return s.dial()
}

// dial connects the bench's own client, which reads the runs' histories.
func (s *side) dial() error {
	for k, v := range s.env {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s.c, err = temporalclient.Dial(cfg, client.Options{Logger: quietLogger})
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startWorker starts the side's worker with extra on top of its
// environment; on a cluster, it restarts the cluster's workers with it.
func (s *side) startWorker(ctx context.Context, extra map[string]string) error {
	if s.clusterWorkers > 0 {
		return s.restartClusterWorkers(ctx, extra)
	}
	s.stopWorker()
	w := filepath.Join(s.dir, fmt.Sprintf("worker-%d", time.Now().UnixNano()))
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(w, "home"), "TETHER_HOME=" + filepath.Join(w, "tether"),
		"TETHER_STATE_DIR=" + filepath.Join(w, "state"), "TETHER_WORK_DIR=" + filepath.Join(w, "work"),
		"TETHER_WORKER_ID=visitbench-" + s.name, "TETHER_LOG_LEVEL=warn",
	}
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	if err := os.MkdirAll(filepath.Join(w, "home"), 0o755); err != nil {
		return err
	}
	log, err := os.Create(w + ".log")
	if err != nil {
		return err
	}
	s.logs = append(s.logs, w+".log")
	cmd := exec.Command(filepath.Join(s.root, "bin", "tether-worker"))
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start bin/tether-worker: %w", s.name, err)
	}
	s.worker = cmd
	return nil
}

// stopWorker stops the side's own worker (SIGTERM: it sends its last
// spans) and waits for it.
func (s *side) stopWorker() {
	if s.worker == nil {
		return
	}
	StopWorker(s.worker)
	s.worker = nil
}

// StopWorker stops a worker the benchmark or the soak started in a
// process group of its own: SIGTERM (it sends its last spans), up to 30 s
// for it to exit, then SIGKILL; it returns once the worker has exited.
func StopWorker(w *exec.Cmd) {
	_ = syscall.Kill(-w.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = w.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (s *side) restartClusterWorkers(ctx context.Context, extra map[string]string) error {
	env := append(os.Environ(), "TETHER_CLUSTER_DIR="+s.clusterDir)
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	for i := 1; i <= s.clusterWorkers; i++ {
		for _, verb := range []string{"stop", "start"} {
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(s.root, "scripts", "cluster.sh"), "worker", verb, strconv.Itoa(i))
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("cluster.sh worker %s %d: %w\n%s", verb, i, err, out)
			}
		}
	}
	return nil
}

// cpu is the processor time the side's worker(s) and server have used.
func (s *side) cpu() CPU {
	var c CPU
	var workers, servers []int
	if s.worker != nil {
		workers = append(workers, s.worker.Process.Pid)
	}
	if s.server != nil {
		servers = append(servers, s.server.Pid)
	}
	if s.clusterWorkers > 0 {
		for i := 1; i <= s.clusterWorkers; i++ {
			workers = append(workers, pidOf(filepath.Join(s.clusterDir, "run", fmt.Sprintf("worker-%d.pid", i))))
		}
		servers = append(servers, pidOf(filepath.Join(s.clusterDir, "run", "temporal.pid")))
	}
	for _, pid := range workers {
		self, children := procCPU(pid)
		c.Worker += self
		c.Children += children
	}
	for _, pid := range servers {
		self, _ := procCPU(pid)
		c.Server += self
	}
	return c
}

func pidOf(file string) int {
	b, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// close stops what the side started; a cluster's workers are restarted
// as they were.
func (s *side) close(ctx context.Context) {
	if s.c != nil {
		s.c.Close()
	}
	s.stopWorker()
	if s.clusterWorkers > 0 {
		if err := s.restartClusterWorkers(ctx, nil); err != nil {
			fmt.Fprintln(os.Stderr, "visitbench:", err)
		}
	}
	if s.server != nil {
		StopServer(s.server)
	}
}

// StartServer starts the Temporal dev server `make run` starts with root's
// scripts/devserver.sh, env added to this process's environment, and
// returns its process.
func StartServer(ctx context.Context, root string, env ...string) (*os.Process, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "devserver.sh"))
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/devserver.sh: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, fmt.Errorf("scripts/devserver.sh printed %q, not a pid", out)
	}
	p, _ := os.FindProcess(pid) // never fails on Unix
	return p, nil
}

// StopServer stops a Temporal dev server the benchmark or the soak
// started: SIGTERM, up to 10 s for it to exit, then SIGKILL.
func StopServer(p *os.Process) {
	_ = p.Signal(syscall.SIGTERM)
	for range 100 {
		if p.Signal(syscall.Signal(0)) != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.Kill()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
