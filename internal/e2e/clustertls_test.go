package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/pki"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/temporalclient"
	"github.com/tether-run/tether/internal/testenv"
)

// TestClusterFrontendRequiresMutualTLS starts the production topology the
// way `make cluster` does (scripts/cluster.sh: PostgreSQL, the Temporal
// server, versitygw and a worker) on ports of its own, and tries what an
// agent on the worker's machine tried before the frontend had TLS: answer
// another run's question, which waits for a person, through the HTTP API
// and through gRPC. Without a certificate of the cluster (none at all, one
// of another cluster, or a client certificate against the history and
// matching services) every attempt is refused and the question stays
// open; with the certificate `cluster.sh env` names, the README's
// `temporal` lines and the HTTP API work, and the answer lands. A tool
// node on the cluster's worker, confined as every tool is, then tries to
// list and read the certificate files, and cannot.
func TestClusterFrontendRequiresMutualTLS(t *testing.T) {
	cl := startTLSCluster(t)
	t.Setenv("TETHER_HOME", filepath.Join(cl.dir, "cli"))
	for k, v := range cl.env {
		t.Setenv(k, v)
	}
	cfg, err := config.FromEnv()
	require.NoError(t, err)
	require.True(t, cfg.TemporalTLS.Enabled && cfg.TemporalTLS.CertFile != "", "cluster.sh env names a client certificate: %+v", cfg.TemporalTLS)
	c, err := temporalclient.Dial(cfg, client.Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	g := testGraph(t, "victim")
	id := "victim-" + token()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
	require.NoError(t, err)
	waitForOpenQuestion(t, c, id)

	signal := fmt.Sprintf("/api/v1/namespaces/default/workflows/%s/signal/%s", id, runapi.SignalAnswer)
	body := func(text string) string { return `{"input":[{"question_id":"ask-1","text":"` + text + `"}]}` }
	caPool := x509.NewCertPool()
	require.True(t, caPool.AppendCertsFromPEM(readTLSFile(t, cfg.TemporalTLS.CAFile)))
	other := t.TempDir()
	_, err = pki.Ensure(pki.Options{Dir: other, Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	otherCert, err := tls.LoadX509KeyPair(filepath.Join(other, pki.RoleCLI, pki.CertFile), filepath.Join(other, pki.RoleCLI, pki.KeyFile))
	require.NoError(t, err)

	t.Run("HTTP API without a certificate", func(t *testing.T) {
		for name, u := range map[string]string{"plain HTTP": "http://" + cl.httpAddr, "TLS": "https://" + cl.httpAddr} {
			for cname, certs := range map[string][]tls.Certificate{"no certificate": nil, "another cluster's": {otherCert}} {
				tc := &tls.Config{RootCAs: caPool}
				if certs != nil {
					// Offered whatever CAs the server names.
					tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
				}
				status, err := postSignal(u+signal, body("pwned"), tc)
				assert.False(t, err == nil && status < 300, "%s, %s: the frontend took the signal (status %d)", name, cname, status)
			}
		}
	})
	t.Run("gRPC without a certificate", func(t *testing.T) {
		for name, tt := range map[string]config.TemporalTLS{
			"plain text":        {},
			"TLS, no client":    {Enabled: true, CAFile: cfg.TemporalTLS.CAFile},
			"another cluster's": {Enabled: true, CAFile: cfg.TemporalTLS.CAFile, CertFile: filepath.Join(other, pki.RoleCLI, pki.CertFile), KeyFile: filepath.Join(other, pki.RoleCLI, pki.KeyFile)},
		} {
			attacker := cfg
			attacker.TemporalTLS = tt
			opts, err := temporalclient.Options(attacker, client.Options{})
			require.NoError(t, err)
			lazy, err := client.NewLazyClient(opts)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err = lazy.SignalWorkflow(ctx, id, "", runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "pwned"})
			cancel()
			lazy.Close()
			assert.Error(t, err, "%s: the frontend took the signal", name)
		}
	})
	t.Run("history and matching refuse a client certificate", func(t *testing.T) {
		cli, err := tls.LoadX509KeyPair(cfg.TemporalTLS.CertFile, cfg.TemporalTLS.KeyFile)
		require.NoError(t, err)
		internode := x509.NewCertPool()
		require.True(t, internode.AppendCertsFromPEM(readTLSFile(t, filepath.Join(cl.dir, "tls", pki.RoleServer, pki.InternodeCAFile))))
		for _, port := range []int{cl.port + 1, cl.port + 2} {
			conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{
				RootCAs: internode, ServerName: pki.InternodeName,
				// Offered whatever CAs the server names.
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cli, nil },
			})
			if err == nil {
				// TLS 1.3 reports a refused client certificate on the
				// first read.
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = conn.Read(make([]byte, 1))
				conn.Close()
			}
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "timeout", "port %d: the handshake was refused, not left hanging", port)
		}
	})

	// The question is still open: nothing above reached the run.
	st := waitForOpenQuestion(t, c, id)
	require.Equal(t, "ask-1", st.Questions[0].ID)

	t.Run("the README's temporal lines", func(t *testing.T) {
		out, err := cl.temporal(t, "workflow", "list", "--query", `TetherStatus="waiting"`)
		require.NoError(t, err, "%s", out)
		assert.Contains(t, out, id)
		out, err = cl.temporal(t, "workflow", "query", "--workflow-id", id, "--type", runapi.QueryState)
		require.NoError(t, err, "%s", out)
		assert.Contains(t, out, "deploy to production?")
	})
	t.Run("HTTP API with the cluster's certificate", func(t *testing.T) {
		cert, err := tls.LoadX509KeyPair(cfg.TemporalTLS.CertFile, cfg.TemporalTLS.KeyFile)
		require.NoError(t, err)
		status, err := postSignal("https://"+cl.httpAddr+signal, body("yes"), &tls.Config{RootCAs: caPool, Certificates: []tls.Certificate{cert}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, "yes", res.Output["answer"], "the run took the certified client's answer, and no other")

	t.Run("a confined tool cannot read the certificates", func(t *testing.T) {
		tlsDir := filepath.Join(cl.dir, "tls")
		var files []string
		require.NoError(t, filepath.WalkDir(tlsDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		}))
		require.Contains(t, files, filepath.Join(tlsDir, pki.RoleWorker, pki.KeyFile))
		// Readable to the worker's user: only the sandbox stands between
		// the tool and them.
		for _, f := range files {
			readTLSFile(t, f)
		}
		script := `for f in "$@"; do if cat "$f" >/dev/null 2>&1; then echo "read $f"; else echo "refused $f"; fi; done
ls "` + tlsDir + `" >/dev/null 2>&1 && echo listed-tls || echo refused-listing
cat "` + filepath.Join(tlsDir, pki.RoleWorker, pki.KeyFile) + `"
echo own > own.txt && cat own.txt`
		argv := append([]string{"sh", "-c", script, "peek"}, files...)
		g, err := graph.Parse(fmt.Appendf(nil, `
name: peek
start: peek
nodes:
  - {id: peek, kind: tool, run: %s}
  - {id: done, kind: end}
edges:
  - {from: peek, to: done, with: {stdout: "output.stdout", stderr: "output.stderr"}}
`, yamlFlowList(argv)), "peek.yaml")
		require.NoError(t, err)
		id := "peek-" + token()
		run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
			runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
		require.NoError(t, err)
		var res runapi.GraphRunResult
		require.NoError(t, run.Get(ctx, &res))
		stdout, _ := res.Output["stdout"].(string)
		stderr, _ := res.Output["stderr"].(string)
		t.Logf("the tool's stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stdout, "own", "the tool ran, in its own workspace")
		for _, f := range files {
			assert.Contains(t, stdout, "refused "+f)
			assert.NotContains(t, stdout, "read "+f)
		}
		assert.Contains(t, stdout, "refused-listing")
		assert.NotContains(t, stdout+stderr, "PRIVATE KEY")
	})
}

// clusterUnderTest is a running scripts/cluster.sh topology.
type clusterUnderTest struct {
	dir      string
	port     int
	httpAddr string
	env      map[string]string
}

// startTLSCluster runs `scripts/cluster.sh up --workers 1` in a directory and
// on ports of its own, with a worker built from this tree, and `down`
// when the test ends.
func startTLSCluster(t *testing.T) *clusterUnderTest {
	t.Helper()
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			testenv.Unavailable(t, "PostgreSQL is not installed (apt-get install postgresql)")
		}
	}
	testenv.Tool(t, "temporal")
	testenv.Tool(t, "temporal-server")
	testenv.Tool(t, "versitygw")
	root := testenv.Root()
	worker := buildWorker(t)

	cl := &clusterUnderTest{dir: filepath.Join(t.TempDir(), "cluster"), port: freeClusterBase(t)}
	cl.httpAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(cl.port+10))
	env := []string{
		"TETHER_CLUSTER_DIR=" + cl.dir, "TETHER_CLUSTER_PORT=" + strconv.Itoa(cl.port),
		"TETHER_CLUSTER_S3_PORT=" + strconv.Itoa(freeLoopbackPort(t)), "TETHER_CLUSTER_PG_PORT=" + strconv.Itoa(freeLoopbackPort(t)),
		"TETHER_CLUSTER_WORKER_BIN=" + worker,
	}
	script := filepath.Join(root, "scripts", "cluster.sh")
	sh := func(args ...string) ([]byte, error) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Dir = root
		cmd.Env = append(envWithoutCluster(), env...)
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := sh("down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	if out, err := sh("up", "--workers", "1"); err != nil {
		logs, _ := filepath.Glob(filepath.Join(cl.dir, "log", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s (tail):\n%s", l, logTail(b, 3000))
		}
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "-c", `eval "$(bash "$0" env)" && env`, script)
	cmd.Env = append(envWithoutCluster(), env...)
	out, err := cmd.Output()
	require.NoError(t, err)
	cl.env = map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && (strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "TETHER_") || strings.HasPrefix(k, "AWS_")) && !strings.HasPrefix(k, "TETHER_CLUSTER_") {
			cl.env[k] = v
		}
	}
	require.Equal(t, filepath.Join(cl.dir, "tls", pki.RoleCLI, pki.CertFile), cl.env["TEMPORAL_TLS_CLIENT_CERT_PATH"], "env names the Temporal CLI's variables too")
	return cl
}

// temporal runs the Temporal CLI with the environment `cluster.sh env`
// gives, as the README's lines do.
func (cl *clusterUnderTest) temporal(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(testenv.Root(), "bin", "temporal"), args...)
	cmd.Env = envWithoutCluster()
	for k, v := range cl.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// envWithoutCluster is this process's environment without the settings a
// developer's shell may hold for another cluster.
func envWithoutCluster() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEMPORAL_") && !strings.HasPrefix(kv, "TETHER_") && !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// freeClusterBase picks a frontend port whose every sibling the cluster's
// Temporal server binds is free. Temporal keeps them in a smallint column
// (cluster membership), so all stay below 32768, which is also below the
// kernel's ephemeral range.
func freeClusterBase(t *testing.T) int {
	t.Helper()
	for range 200 {
		base := 10000 + rand.IntN(32767-767-10000)
		free := true
		for _, off := range []int{0, 1, 2, 6, 10, -300, -299, -298, -294, 767} {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+off)))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free range of ports for the cluster")
	return 0
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitForOpenQuestion waits until run id asks its question.
func waitForOpenQuestion(t *testing.T, c client.Client, id string) *runapi.State {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		v, err := c.QueryWorkflow(ctx, id, "", runapi.QueryState)
		cancel()
		var st runapi.State
		if err == nil && v.Get(&st) == nil && len(st.Questions) > 0 {
			return &st
		}
		require.True(t, time.Now().Before(deadline), "run %s asked no question: %v %+v", id, err, st)
		time.Sleep(500 * time.Millisecond)
	}
}

// postSignal sends body to url and returns the response's status.
func postSignal(url, body string, tc *tls.Config) (int, error) {
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func readTLSFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// yamlFlowList writes args as a YAML flow list of quoted strings.
func yamlFlowList(args []string) string {
	var b bytes.Buffer
	b.WriteString("[")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString("]")
	return b.String()
}

func logTail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
