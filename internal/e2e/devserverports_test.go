package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/testenv"
)

// Finding 3 (MEDIUM) of the attack on the sandbox: scripts/devserver.sh,
// and so `make run`, let the dev server put its HTTP API on a port of its
// choosing, while the worker refused only the frontend's port + 10; a
// tool whose allowlist named the real port exactly listed every workflow
// and answered another run's question, and the Web UI, the metrics and
// the server's internal services were reachable the same way.
//
// Here the dev server starts as `make run` starts it (the script), the
// worker as scripts/demo.sh starts it (the real tether-worker, given the
// ports the script wrote), a victim run waits on a question, and a tool
// node allows exactly every port the dev server listens on (found from
// /proc, as an attacker who knows the machine would) and asks each for
// the workflows, straight and through the proxy, and signals the victim.
// Every port is refused and noted, and the question stays open.
func TestToolCannotReachTheDevServersPorts(t *testing.T) {
	if sandbox.ABI() < 1 {
		testenv.Unavailable(t, "this kernel has no Landlock")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Unavailable(t, "curl, the attack's tool, is not installed (apt-get install curl)")
	}
	worker := buildWorker(t)
	testenv.Tool(t, "temporal") // in the cache before the script asks for it
	home := t.TempDir()
	port, ui := freeTCPPort(t, 10), freeTCPPort(t, 0)
	cmd := exec.Command("bash", filepath.Join(testenv.Root(), "scripts", "devserver.sh"))
	cmd.Env = append(os.Environ(), "TETHER_HOME="+home, "TEMPORAL_PORT="+strconv.Itoa(port), "TEMPORAL_UI_PORT="+strconv.Itoa(ui))
	out, err := cmd.Output()
	require.NoError(t, err, "scripts/devserver.sh: %s", out)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err, "the script prints the server's pid: %q", out)
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(home, "temporal.log"))
			t.Logf("dev server log:\n%s", log)
		}
	})
	frontend := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ports := listeningPorts(t, pid)
	require.Contains(t, ports, port)
	require.Contains(t, ports, ui, "the Web UI where the script put it")
	require.GreaterOrEqual(t, len(ports), 4, "the frontend, its HTTP API, the Web UI and internal services: %v", ports)
	t.Logf("the dev server listens on %v", ports)

	// The worker as scripts/demo.sh starts it: with the ports the script
	// named, when it named them.
	envFile, _ := os.ReadFile(filepath.Join(home, "temporal.env"))
	deny, _ := strings.CutPrefix(strings.TrimSpace(string(envFile)), "TETHER_SANDBOX_DENY=")
	store := t.TempDir()
	startWorkerProcess(t, worker, []string{
		"TEMPORAL_ADDRESS=" + frontend, "TETHER_BLOB_URL=file://" + store, "TETHER_SANDBOX=full",
		"TETHER_SANDBOX_DENY=" + deny, "TETHER_CLI_BIN=", "TETHER_HOME=" + t.TempDir(),
	})
	c, err := client.Dial(client.Options{HostPort: frontend, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	victim := "victim-" + token()
	vg, err := graph.Parse([]byte("name: victim\nstart: deploy\nnodes:\n  - {id: deploy, kind: human, question: deploy to production?}\n  - {id: done, kind: end}\nedges: [{from: deploy, to: done}]\n"), "victim.yaml")
	require.NoError(t, err)
	_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: victim, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: victim, Graph: vg, Options: testRunOptions})
	require.NoError(t, err)
	qid := waitPending(t, c, victim)

	var allow []string
	var script strings.Builder
	script.WriteString("probe() { name=$1; shift; echo \"$name=$(curl -s -m 10 -o /dev/null -w '%{http_code}/%{http_connect}' \"$@\")\"; }\n")
	signal := fmt.Sprintf(`-X POST -H 'Content-Type: application/json' -d '{"input":[{"question_id":%q,"text":"pwned"}]}'`, qid)
	for _, p := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		allow = append(allow, addr)
		for _, via := range []struct{ suffix, flags string }{{"", `--noproxy '*'`}, {"-proxy", `--noproxy '' -p -x "$HTTPS_PROXY"`}} {
			fmt.Fprintf(&script, "probe port-%d%s %s http://%s/api/v1/namespaces/default/workflows\n", p, via.suffix, via.flags, addr)
			fmt.Fprintf(&script, "probe signal-%d%s %s %s http://%s/api/v1/namespaces/default/workflows/%s/signal/answer\n", p, via.suffix, via.flags, signal, addr, victim)
		}
	}
	script.WriteString("echo attack-done\n")
	cue := "echo " + base64.StdEncoding.EncodeToString([]byte(script.String())) + " | base64 -d | sh"
	g := &graph.Graph{Name: "ports", Start: "probe", Nodes: []graph.Node{
		{ID: "probe", Kind: graph.KindTool, Run: []string{"/bin/sh", "-c", cue}, Network: &graph.Network{Allow: allow}},
		{ID: "done", Kind: graph.KindEnd},
	}, Edges: []graph.Edge{{From: "probe", To: "done"}}}
	require.False(t, graph.Validate(g).HasErrors(), graph.Validate(g).String())
	id := "ports-" + token()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: testRunOptions})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res), "the attacker's run completes")
	blobs, err := blob.Open(context.Background(), "file://"+store)
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	cp, err := runstore.New(blobs).Latest(context.Background(), id)
	require.NoError(t, err)

	stdout := fmt.Sprint(cp.Outputs["probe"]["stdout"])
	require.Contains(t, stdout, "attack-done", "%v", cp.Outputs["probe"])
	got := regexp.MustCompile(`(port|signal)-\d+(-proxy)?=\d{3}/\d{3}`).FindAllString(stdout, -1)
	require.Len(t, got, 4*len(ports), stdout)
	refused := fmt.Sprint(cp.Outputs["probe"][activities.NetworkRefusedKey])
	for _, p := range ports {
		assert.Contains(t, got, fmt.Sprintf("port-%d=000/000", p), "port %d answered straight", p)
		assert.Contains(t, got, fmt.Sprintf("port-%d-proxy=000/403", p), "port %d answered through the proxy", p)
		assert.Contains(t, got, fmt.Sprintf("signal-%d=000/000", p))
		assert.Contains(t, got, fmt.Sprintf("signal-%d-proxy=000/403", p))
		assert.Regexp(t, fmt.Sprintf(`CONNECT 127\.0\.0\.1:%d refused: the worker's `, p), refused, "the refusal of port %d is noted", p)
	}
	assert.True(t, pendingStill(c, victim, qid), "the victim's question is still open")
}

// freeTCPPort is a port free on 127.0.0.1 with the one plus also free
// (0: none).
func freeTCPPort(t *testing.T, plus int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if plus == 0 || p+plus > 65535 {
			if plus == 0 {
				return p
			}
			continue
		}
		if l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+plus))); err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

// listeningPorts are the TCP ports process pid listens on, read from
// /proc as anyone on the machine could.
func listeningPorts(t *testing.T, pid int) []int {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hex, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hex, 16, 32); err == nil && !slices.Contains(ports, int(p)) {
				ports = append(ports, int(p))
			}
		}
	}
	slices.Sort(ports)
	return ports
}
