package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tether-run/tether/internal/visitbench"
)

// DevServer is the embedded default `make run` starts, started for the
// soak's measures of its ceiling: the Temporal dev server of
// scripts/devserver.sh (SQLite, the settings that script ships) and one
// tether-worker, each with a home of its own, and a file store.
type DevServer struct {
	Home string
	// Metrics is the server's Prometheus endpoint.
	Metrics string
	server  *os.Process
	worker  *exec.Cmd
}

// StartDevServer starts the dev server and a worker from the repository
// at root, with extra in the worker's environment, and points this
// process's environment (which soak.New reads) at them.
func StartDevServer(ctx context.Context, root string, extra []string) (*DevServer, error) {
	home, err := os.MkdirTemp("", "tether-devserver-*")
	if err != nil {
		return nil, err
	}
	d := &DevServer{Home: home}
	port, ui, metrics := freePort(), freePort(), freePort()
	d.Metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	d.server, err = visitbench.StartServer(ctx, root, "TETHER_HOME="+home, "TEMPORAL_PORT="+strconv.Itoa(port), "TEMPORAL_UI_PORT="+strconv.Itoa(ui),
		"TEMPORAL_METRICS_PORT="+strconv.Itoa(metrics))
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"TEMPORAL_ADDRESS": "127.0.0.1:" + strconv.Itoa(port), "TEMPORAL_NAMESPACE": "default",
		"TETHER_HOME": home, "TETHER_BLOB_URL": "file://" + filepath.Join(home, "store"),
	}
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	log, err := os.Create(filepath.Join(home, "worker.log"))
	if err != nil {
		return nil, err
	}
	d.worker = exec.Command(filepath.Join(root, "bin", "tether-worker"))
	d.worker.Env = append(append(os.Environ(), "TETHER_LOG_LEVEL=warn"), extra...)
	d.worker.Stdout, d.worker.Stderr = log, log
	d.worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.worker.Start(); err != nil {
		d.Close()
		return nil, fmt.Errorf("start bin/tether-worker: %w", err)
	}
	return d, nil
}

// Close stops the worker and the server and removes their homes.
func (d *DevServer) Close() {
	if d.worker != nil && d.worker.Process != nil {
		visitbench.StopWorker(d.worker)
	}
	if d.server != nil {
		visitbench.StopServer(d.server)
	}
	_ = os.RemoveAll(d.Home)
}

// Stats are the server's resident memory and the size of its database
// files (the SQLite file and its write-ahead log).
func (d *DevServer) Stats() (rss, db int64) {
	if d == nil || d.server == nil {
		return 0, 0
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.server.Pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(d.Home, "temporal.db*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			db += fi.Size()
		}
	}
	return rss, db
}
