package testenv

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// DevServerArgs are the dynamic-config settings Tether runs the dev server
// with (see scripts/devserver.sh): they lift the dev server's poll-rate
// limit, which otherwise adds ~70 ms to every activity.
var DevServerArgs = []string{
	"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
	"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
	"--dynamic-config-value", "history.transferProcessorMaxPollRPS=10000",
	"--dynamic-config-value", "system.enableActivityEagerExecution=true",
	"--dynamic-config-value", `history.timerProcessorMaxTimeShift="100ms"`,
	// A worker deployment's build that is no longer routed to is called
	// drained a few seconds after its last pinned run ends (by default
	// after 3 to 6 minutes): Temporal checks every refresh interval, and
	// waits out the grace period for visibility to catch up first.
	"--dynamic-config-value", `matching.wv.VersionDrainageStatusRefreshInterval="2s"`,
	"--dynamic-config-value", `matching.wv.VersionDrainageStatusVisibilityGracePeriod="5s"`,
}

// Server is a real Temporal dev server started for a test.
type Server struct {
	dev  *testsuite.DevServer
	log  *SyncBuffer
	stop sync.Once
	// Address is the frontend's host:port; HTTPAddress its HTTP API's.
	Address, HTTPAddress string
}

// Client returns a new client; the caller closes it.
func (s *Server) Client(t testing.TB) client.Client {
	t.Helper()
	// Uncompressed, as Tether's own clients are (temporalclient.Options).
	c, err := client.Dial(client.Options{HostPort: s.Address, Namespace: "default", Logger: log.NewStructuredLogger(discard()),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
	if err != nil {
		t.Fatalf("dial dev server: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// DevServer starts the Temporal CLI's dev server (bin/temporal, built by
// scripts/tools.sh) on a free port, in memory, and stops it when the test
// ends. Its log is printed if the test fails.
func DevServer(t testing.TB) *Server {
	t.Helper()
	path := Tool(t, "temporal")
	buf := &SyncBuffer{}
	// The HTTP API on a port the test knows (the dev server picks one at
	// random otherwise), so that tests can attack and guard it. A port
	// found free can be taken by another listener before the server binds
	// it (the frontend's too, which the test suite picks the same way), so
	// a server that does not start is tried again on other ports.
	var (
		dev      *testsuite.DevServer
		httpPort int
		err      error
	)
	for try := 0; try < 3; try++ {
		buf.Reset()
		httpPort = freePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		dev, err = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
			ExistingPath:  path,
			ClientOptions: &client.Options{Namespace: "default", Logger: log.NewStructuredLogger(discard())},
			LogLevel:      "warn",
			ExtraArgs:     append(slices.Clone(DevServerArgs), "--http-port", strconv.Itoa(httpPort)),
			Stdout:        buf,
			Stderr:        buf,
		})
		cancel()
		if err == nil {
			break
		}
		t.Logf("the dev server did not start (try %d): %v\n%s", try+1, err, buf.String())
	}
	if err != nil {
		Unavailable(t, "start Temporal dev server %s: %v", path, err)
		return nil
	}
	s := &Server{dev: dev, log: buf, Address: dev.FrontendHostPort(), HTTPAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev server log:\n%s", buf.String())
		}
		s.Stop()
	})
	return s
}

// Stop stops the server before the test ends: Temporal down, for a test
// of what a client says then. A test that stops a server has it to
// itself.
func (s *Server) Stop() { s.stop.Do(func() { _ = s.dev.Stop() }) }

// SyncBuffer is an output a process or goroutine writes while the test
// reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
