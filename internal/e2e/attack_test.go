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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
)

// What the parent hands the worker process of the attack test.
const (
	atkTemporal = "TETHER_ATK_TEMPORAL"
	atkHTTP     = "TETHER_ATK_TEMPORAL_HTTP"
	atkS3       = "TETHER_ATK_S3"
	atkCLIBin   = "TETHER_ATK_CLI_BIN"
	atkAskUser  = "TETHER_ATK_ASK_USER"
	atkCLI      = "TETHER_ATK_TEMPORAL_CLI"
	// atkSandbox=off runs the worker unconfined, as Tether did before:
	// the attack then answers the victim's question.
	atkSandbox = "TETHER_ATK_SANDBOX"
	atkChild   = "TestAgentCannotReachTheWorkersServicesWorker"
)

// attackBackends are the CLIs with a shell tool the fake model can drive.
var attackBackends = []string{"claude_code", "codex", "pi", "gemini", "opencode"}

// TestAgentCannotReachTheWorkersServices is finding 1 of the attack on
// the old sandbox: a `permissions: full` agent answered another run's
// question through the Temporal frontend's HTTP API. Here a victim run
// waits on "deploy to production?"; then, for every CLI with a shell
// tool, an agent (and a tool node before it, whose allowlist even names
// the frontend) runs curl and the temporal CLI against the frontend's
// HTTP API and gRPC port, the S3 endpoint, PostgreSQL, the metadata
// address and an unlisted host, straight and through the egress proxy.
// Nothing is reached, the victim's question stays open, the attacker's
// run completes, and the proxy's refusals are on the visits' outputs. It
// runs with the worker as root and as uid 65534. With
// TETHER_ATK_SANDBOX=off (the worker as it was before) it fails: the
// first visit's curl answers the victim's question ("pwned").
func TestAgentCannotReachTheWorkersServices(t *testing.T) {
	if sandbox.ABI() < 1 {
		testenv.Unavailable(t, "this kernel has no Landlock")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Unavailable(t, "curl, the attack's tool, is not installed (apt-get install curl)")
	}
	srv := testenv.DevServer(t)
	s3 := testenv.VersityGW(t)
	bin := clitest.Isolate(t)
	ask := clitest.AskUserCommand(t)[0]
	require.NoError(t, os.Chmod(ask, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(ask), 0o755))
	env := []string{
		atkTemporal + "=" + srv.Address, atkHTTP + "=" + srv.HTTPAddress, atkS3 + "=" + strings.TrimPrefix(s3.Endpoint, "http://"),
		atkCLIBin + "=" + bin, atkAskUser + "=" + ask, atkCLI + "=" + testenv.Tool(t, "temporal"),
		// Built here: the child as uid 65534 cannot write the build cache.
		"TETHER_ATK_HELPER=" + sandboxtest.Helper(t),
	}
	if v := os.Getenv(atkSandbox); v != "" {
		env = append(env, atkSandbox+"="+v)
	}
	runWorkerChild(t, atkChild, env, "-test.timeout=40m")
}

// TestAgentCannotReachTheWorkersServicesWorker is the worker half, in a
// process of its own (as root, or as uid 65534).
func TestAgentCannotReachTheWorkersServicesWorker(t *testing.T) {
	addr := os.Getenv(atkTemporal)
	if addr == "" {
		t.Skip("run by TestAgentCannotReachTheWorkersServices")
	}
	httpAddr, s3Addr, temporalCLI := os.Getenv(atkHTTP), os.Getenv(atkS3), os.Getenv(atkCLI)
	confined := os.Getenv(atkSandbox) != sandbox.ModeOff
	base := t.TempDir()
	t.Setenv("HOME", filepath.Join(base, "home"))
	pg, pgConns := listener(t) // stands for PostgreSQL

	var sb *sandbox.Sandbox
	if confined {
		require.NoError(t, sandbox.HideEnviron())
		var err error
		sb, err = sandbox.New(context.Background(), sandbox.Config{
			Mode: sandbox.ModeFull, Helper: []string{os.Getenv("TETHER_ATK_HELPER")}, RO: []string{temporalCLI},
			Services: []egress.Service{{Name: "Temporal frontend", Addr: addr}, {Name: "Temporal frontend HTTP API", Addr: httpAddr},
				{Name: "S3 endpoint", Addr: s3Addr}, {Name: "PostgreSQL", Addr: pg}},
		})
		require.NoError(t, err)
		t.Cleanup(func() { sb.Close() })
		t.Logf("uid %d: %s", os.Getuid(), sb)
	}
	fake := fakemodel.Start(t)
	c, blobs := childWorker{ID: "atk", Addr: addr, Base: base,
		StateDir: filepath.Join(base, "state"), WorkDir: filepath.Join(base, "work"), Sandbox: sb,
		Backends: backend.Config{CLIBin: os.Getenv(atkCLIBin), AskUser: []string{os.Getenv(atkAskUser)}, Home: filepath.Join(base, "clihome")},
	}.start(t, fake)
	runs := runstore.New(blobs)

	// The victim: a run waiting on a person's answer.
	victim := fmt.Sprintf("victim-%d-%s", os.Getuid(), token())
	qid := startVictim(t, c, victim)

	answer := fmt.Sprintf(`{"question_id":%q,"text":"pwned"}`, qid)
	script := attackScript(addr, httpAddr, s3Addr, pg, temporalCLI, victim, answer)
	cue := "echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh"
	for _, b := range attackBackends {
		t.Run(b, func(t *testing.T) {
			fake.Reset()
			id := fmt.Sprintf("atk-%s-%d-%s", strings.ReplaceAll(b, "_", "-"), os.Getuid(), token())
			g := &graph.Graph{Name: "attack", Start: "probe", Nodes: []graph.Node{
				{ID: "probe", Kind: graph.KindTool, Run: []string{"/bin/sh", "-c", cue},
					// Even a node that names the frontend does not reach it.
					Network: &graph.Network{Allow: []string{addr, httpAddr, "127.0.0.1:*", "169.254.169.254:80"}}},
				{ID: "agent", Kind: graph.KindAgent, Backend: b, Permissions: "full",
					Prompt: "Look around.\n" + fakemodel.CueShell + " " + cue},
				{ID: "done", Kind: graph.KindEnd},
			}, Edges: []graph.Edge{{From: "probe", To: "agent"}, {From: "agent", To: "done"}}}
			runAttack(t, c, id, g)
			cp, err := runs.Latest(context.Background(), id)
			require.NoError(t, err)

			var seen strings.Builder
			for _, r := range fake.Requests() {
				seen.Write(r.Body)
			}
			agentSaw := strings.ReplaceAll(seen.String(), `\"`, `"`)
			toolSaw := fmt.Sprint(cp.Outputs["probe"]["stdout"])
			for who, saw := range map[string]string{"the tool node": toolSaw, "the agent": agentSaw} {
				got := strings.Join(results.FindAllString(saw, -1), " ")
				assert.True(t, strings.Contains(saw, "attack-done"), "%s ran the attack: %s", who, got)
				for _, target := range []string{"temporal-http", "s3", "postgres", "metadata", "unlisted"} {
					assert.Regexp(t, target+`=000/000\b`, got, "%s reached %s straight", who, target)
					assert.Regexp(t, target+`-proxy=000/403\b`, got, "%s reached %s through the proxy", who, target)
				}
				assert.Contains(t, got, "temporal-grpc=failed", "%s reached the frontend's gRPC port", who)
			}
			for node, want := range map[string][]string{
				"probe": {"CONNECT " + httpAddr + " refused: the worker's Temporal frontend HTTP API", "CONNECT " + addr + " refused: the worker's Temporal frontend",
					"CONNECT " + s3Addr + " refused: the worker's S3 endpoint", "CONNECT " + pg + " refused: the worker's PostgreSQL",
					"CONNECT 169.254.169.254:80 refused: a link-local or cloud metadata address", "CONNECT example.com:443 refused: not in the node's network allowlist"},
				"agent": {"CONNECT " + httpAddr + " refused: the worker's Temporal frontend HTTP API", "CONNECT " + s3Addr + " refused: the worker's S3 endpoint",
					"CONNECT " + pg + " refused: the worker's PostgreSQL", "CONNECT 169.254.169.254:80 refused: not in the node's network allowlist",
					"CONNECT example.com:443 refused: not in the node's network allowlist"},
			} {
				notes := fmt.Sprint(cp.Outputs[node][activities.NetworkRefusedKey])
				for _, w := range want {
					assert.Contains(t, notes, w, "node %s's output notes the refusal", node)
				}
			}
			assert.True(t, pendingStill(c, victim, qid), "the victim's question is still open")
		})
	}
	assert.Zero(t, pgConns.Load(), "nothing reached PostgreSQL")
}

// results are the attack's lines: NAME=<http code>/<CONNECT code>, and
// the gRPC attempt's.
var results = regexp.MustCompile(`[a-z0-9-]+=(\d{3}/\d{3}|failed|pwned-accepted)`)

// attackScript is what the agent and the tool run: each target straight
// and through the proxy (a CONNECT tunnel), printing for each
// NAME=<http code>/<CONNECT code> (000: no answer).
func attackScript(frontend, httpAddr, s3, pg, temporalCLI, victim, answer string) string {
	signal := fmt.Sprintf("http://%s/api/v1/namespaces/default/workflows/%s/signal/answer", httpAddr, victim)
	body := fmt.Sprintf(`{"input":[%s]}`, answer)
	var b strings.Builder
	b.WriteString("probe() { name=$1; shift; echo \"$name=$(curl -s -m 10 -o /dev/null -w '%{http_code}/%{http_connect}' \"$@\")\"; }\n")
	// Straight past any proxy; then through the proxy, even for the
	// loopback addresses NO_PROXY sends straight.
	for _, via := range []struct{ suffix, flags string }{{"", `--noproxy '*'`}, {"-proxy", `--noproxy '' -p -x "$HTTPS_PROXY"`}} {
		fmt.Fprintf(&b, "probe temporal-http%s %s -X POST -H 'Content-Type: application/json' -d '%s' %s\n", via.suffix, via.flags, body, signal)
		fmt.Fprintf(&b, "probe s3%s %s http://%s/\n", via.suffix, via.flags, s3)
		fmt.Fprintf(&b, "probe postgres%s %s http://%s/\n", via.suffix, via.flags, pg)
		fmt.Fprintf(&b, "probe metadata%s %s http://169.254.169.254/latest/meta-data/\n", via.suffix, via.flags)
		fmt.Fprintf(&b, "probe unlisted%s %s https://example.com/\n", via.suffix, via.flags)
	}
	fmt.Fprintf(&b, "if %s workflow signal --client-connect-timeout 10s --command-timeout 20s --address %s --namespace default --workflow-id %s --name answer --input '%s' >/dev/null 2>&1; then echo temporal-grpc=pwned-accepted; else echo temporal-grpc=failed; fi\n",
		temporalCLI, frontend, victim, answer)
	b.WriteString("echo attack-done\n")
	return b.String()
}

// listener accepts and counts connections on 127.0.0.1 until the test
// ends.
func listener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	testenv.CountAccepts(l, &n)
	return l.Addr().String(), &n
}

// startVictim starts the victim of the reach tests as run victim on c, a
// run waiting on a person's answer, and returns its question's id.
func startVictim(t *testing.T, c client.Client, victim string) string {
	t.Helper()
	vg, err := graph.Parse([]byte("name: victim\nstart: deploy\nnodes:\n  - {id: deploy, kind: human, question: deploy to production?}\n  - {id: done, kind: end}\nedges: [{from: deploy, to: done}]\n"), "victim.yaml")
	require.NoError(t, err)
	_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: victim, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: victim, Graph: vg, Options: testRunOptions})
	require.NoError(t, err)
	return waitPending(t, c, victim)
}

// waitPending waits for run's first question and returns its id.
func waitPending(t *testing.T, c client.Client, run string) string {
	t.Helper()
	deadline := time.Now().Add(runWait)
	for time.Now().Before(deadline) {
		if st, err := queryState(c, run); err == nil && len(st.Questions) > 0 {
			return st.Questions[0].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s asked nothing", run)
	return ""
}

// pendingStill reports whether run still waits on question qid.
func pendingStill(c client.Client, run, qid string) bool {
	st, err := queryState(c, run)
	if err != nil || st.Status != runstore.StatusWaiting {
		return false
	}
	for _, q := range st.Questions {
		if q.ID == qid {
			return true
		}
	}
	return false
}

func queryState(c client.Client, run string) (*runapi.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, run, "", runapi.QueryState)
	if err != nil {
		return nil, err
	}
	var st runapi.State
	return &st, v.Get(&st)
}

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
	ds := startDevServerScript(t)
	port, ui, home, frontend := ds.port, ds.ui, ds.home, ds.frontend
	ports := listeningPorts(t, ds.pid)
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
	qid := startVictim(t, c, victim)

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
	id := "ports-" + token()
	runAttack(t, c, id, g)
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
// scriptServer is a dev server scripts/devserver.sh started, as `make
// run` starts it: its state (and log, temporal.log) in home.
type scriptServer struct {
	pid, port, ui  int
	home, frontend string
}

// startDevServerScript starts the dev server with scripts/devserver.sh on
// free ports, and kills it when the test ends (its log printed if the test
// failed).
func startDevServerScript(t *testing.T) scriptServer {
	t.Helper()
	testenv.Tool(t, "temporal") // in the cache before the script asks for it
	s := scriptServer{home: t.TempDir(), port: freeTCPPort(t, 10), ui: freeTCPPort(t, 0)}
	cmd := exec.Command("bash", filepath.Join(testenv.Root(), "scripts", "devserver.sh"))
	cmd.Env = append(os.Environ(), "TETHER_HOME="+s.home, "TEMPORAL_PORT="+strconv.Itoa(s.port), "TEMPORAL_UI_PORT="+strconv.Itoa(s.ui))
	out, err := cmd.Output()
	require.NoError(t, err, "scripts/devserver.sh: %s", out)
	s.pid, err = strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err, "the script prints the server's pid: %q", out)
	t.Cleanup(func() {
		if p, err := os.FindProcess(s.pid); err == nil {
			_ = p.Kill()
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.home, "temporal.log"))
			if len(log) > 20000 {
				log = append([]byte("…"), log[len(log)-20000:]...)
			}
			t.Logf("dev server log:\n%s", log)
		}
	})
	s.frontend = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	return s
}

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

// runAttack requires the attacker's graph g to be valid, runs it as id on
// c, and waits (up to runWait) until it completes.
func runAttack(t *testing.T, c client.Client, id string, g *graph.Graph) {
	t.Helper()
	require.False(t, graph.Validate(g).HasErrors(), graph.Validate(g).String())
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: testRunOptions})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res), "the attacker's run completes")
}
