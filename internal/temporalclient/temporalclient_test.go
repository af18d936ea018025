package temporalclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/pki"
)

// frontend is a stand-in for Temporal's frontend in this unit test: a
// gRPC server of the workflow service (every method unimplemented, which
// the SDK's Dial accepts) behind TLS like the real one's, recording the
// authorization header of each call.
type frontend struct {
	addr string
	mu   sync.Mutex
	auth []string
}

func (f *frontend) authorizations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

// startFrontend serves on loopback: with mutual TLS (requireClientAuth),
// server-side TLS only, or in plain text.
func startFrontend(t *testing.T, dir, mode string) *frontend {
	t.Helper()
	f := &frontend{}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		f.mu.Lock()
		f.auth = append(f.auth, md.Get("authorization")...)
		f.mu.Unlock()
		return h(ctx, req)
	})}
	if mode != "plain" {
		srv := filepath.Join(dir, pki.RoleServer)
		cert, err := tls.LoadX509KeyPair(filepath.Join(srv, pki.FrontendCertFile), filepath.Join(srv, pki.FrontendKeyFile))
		require.NoError(t, err)
		c := &tls.Config{Certificates: []tls.Certificate{cert}}
		if mode == "mtls" {
			pool := x509.NewCertPool()
			b, err := os.ReadFile(filepath.Join(srv, pki.CAFile))
			require.NoError(t, err)
			require.True(t, pool.AppendCertsFromPEM(b))
			c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(c)))
	}
	s := grpc.NewServer(opts...)
	workflowservice.RegisterWorkflowServiceServer(s, workflowservice.UnimplementedWorkflowServiceServer{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	f.addr = ln.Addr().String()
	return f
}

func certs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	_, err := pki.Ensure(pki.Options{Dir: dir, Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	return dir
}

// role is the TLS configuration of a client role of the certificates in dir.
func role(dir, r string) config.TemporalTLS {
	d := filepath.Join(dir, r)
	return config.TemporalTLS{Enabled: true, CertFile: filepath.Join(d, pki.CertFile), KeyFile: filepath.Join(d, pki.KeyFile), CAFile: filepath.Join(d, pki.CAFile)}
}

func dial(t *testing.T, addr string, tt config.TemporalTLS) error {
	t.Helper()
	cfg := config.Config{TemporalAddress: addr, Namespace: "default", TemporalTLS: tt}
	c, err := Dial(cfg, client.Options{ConnectionOptions: client.ConnectionOptions{GetSystemInfoTimeout: 5 * time.Second}})
	if err == nil {
		c.Close()
	}
	return err
}

func TestDialWithMutualTLS(t *testing.T) {
	dir := certs(t)
	f := startFrontend(t, dir, "mtls")
	for _, r := range []string{pki.RoleWorker, pki.RoleCLI} {
		assert.NoError(t, dial(t, f.addr, role(dir, r)), r)
	}

	t.Run("no certificate", func(t *testing.T) {
		tt := role(dir, pki.RoleCLI)
		tt.CertFile, tt.KeyFile = "", ""
		err := dial(t, f.addr, tt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY")
	})
	t.Run("plain text", func(t *testing.T) {
		err := dial(t, f.addr, config.TemporalTLS{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "if the frontend uses TLS, set TEMPORAL_TLS_CA")
	})
	t.Run("a certificate of another cluster", func(t *testing.T) {
		other := certs(t)
		tt := role(other, pki.RoleWorker)
		tt.CAFile = role(dir, pki.RoleWorker).CAFile
		err := dial(t, f.addr, tt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the frontend refused the client certificate")
	})
	t.Run("the CA of another cluster", func(t *testing.T) {
		tt := role(dir, pki.RoleWorker)
		tt.CAFile = role(certs(t), pki.RoleWorker).CAFile
		err := dial(t, f.addr, tt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "set TEMPORAL_TLS_CA to the CA that signed it")
	})
	t.Run("a server name the certificate lacks", func(t *testing.T) {
		tt := role(dir, pki.RoleWorker)
		tt.ServerName = "elsewhere.example"
		err := dial(t, f.addr, tt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "TEMPORAL_TLS_SERVER_NAME")
	})
	t.Run("the server name the certificate carries", func(t *testing.T) {
		tt := role(dir, pki.RoleWorker)
		tt.ServerName = pki.FrontendName
		assert.NoError(t, dial(t, f.addr, tt))
	})
}

// A certificate renewed on disk is what the next connection presents: a
// worker outlives its certificates.
func TestDialPresentsARenewedCertificate(t *testing.T) {
	dir := certs(t)
	tt := role(dir, pki.RoleWorker)
	c, err := TLSConfig(tt)
	require.NoError(t, err)
	first, err := c.GetClientCertificate(nil)
	require.NoError(t, err)

	require.NoError(t, os.Remove(tt.KeyFile))
	_, err = pki.Ensure(pki.Options{Dir: dir, Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	renewed, err := c.GetClientCertificate(nil)
	require.NoError(t, err)
	assert.NotEqual(t, first.Certificate[0], renewed.Certificate[0])

	// Half-written (a key that does not match): the last good pair.
	require.NoError(t, os.WriteFile(tt.KeyFile, []byte("garbage"), 0o600))
	kept, err := c.GetClientCertificate(nil)
	require.NoError(t, err)
	assert.Equal(t, renewed.Certificate[0], kept.Certificate[0])
}

func TestDialWithAnAPIKey(t *testing.T) {
	dir := certs(t)
	t.Run("over TLS", func(t *testing.T) {
		f := startFrontend(t, dir, "tls")
		tt := config.TemporalTLS{Enabled: true, CAFile: role(dir, pki.RoleCLI).CAFile, APIKey: config.Secret("cloud-key")}
		require.NoError(t, dial(t, f.addr, tt))
		assert.Contains(t, f.authorizations(), "Bearer cloud-key")
	})
	t.Run("TLS turned off for a local server", func(t *testing.T) {
		f := startFrontend(t, dir, "plain")
		require.NoError(t, dial(t, f.addr, config.TemporalTLS{Disabled: true, APIKey: config.Secret("local-key")}))
		assert.Contains(t, f.authorizations(), "Bearer local-key")
	})
	t.Run("to a frontend without TLS", func(t *testing.T) {
		f := startFrontend(t, dir, "plain")
		err := dial(t, f.addr, config.TemporalTLS{Enabled: true, APIKey: config.Secret("cloud-key")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the frontend does not use TLS")
		assert.NotContains(t, err.Error(), "cloud-key")
		assert.Empty(t, f.authorizations(), "the key was not sent in plain text")
	})
}

func TestOptionsNameTheFileThatCannotBeRead(t *testing.T) {
	dir := certs(t)
	cfg := config.Config{TemporalAddress: "127.0.0.1:7233", Namespace: "default"}

	cfg.TemporalTLS = role(dir, pki.RoleCLI)
	cfg.TemporalTLS.CAFile = filepath.Join(dir, "missing.pem")
	_, err := Options(cfg, client.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TEMPORAL_TLS_CA")

	cfg.TemporalTLS = role(dir, pki.RoleCLI)
	cfg.TemporalTLS.CAFile = cfg.TemporalTLS.KeyFile
	_, err = Options(cfg, client.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds no PEM certificate")

	cfg.TemporalTLS = role(dir, pki.RoleCLI)
	cfg.TemporalTLS.KeyFile = role(dir, pki.RoleWorker).KeyFile
	_, err = Options(cfg, client.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TEMPORAL_TLS_CERT="+cfg.TemporalTLS.CertFile)

	// Without TLS settings nothing is read, and the address and namespace
	// are cfg's whatever o held.
	cfg.TemporalTLS = config.TemporalTLS{}
	o, err := Options(cfg, client.Options{HostPort: "elsewhere:1", Namespace: "other"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7233", o.HostPort)
	assert.Equal(t, "default", o.Namespace)
	assert.Nil(t, o.ConnectionOptions.TLS)
}

// systemInfo answers GetSystemInfo, the cheapest call with a response, so
// that the benchmark's round trip is all transport.
type systemInfo struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (systemInfo) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{ServerVersion: "bench"}, nil
}

// BenchmarkRoundTrip is what mutual TLS adds to one call on an open
// connection (a connection's handshake is paid once: the SDK keeps it).
func BenchmarkRoundTrip(b *testing.B) {
	dir := b.TempDir()
	_, err := pki.Ensure(pki.Options{Dir: dir, Hosts: []string{"127.0.0.1"}})
	require.NoError(b, err)
	for _, mode := range []string{"plain", "mtls"} {
		b.Run(mode, func(b *testing.B) {
			var opts []grpc.ServerOption
			tt := config.TemporalTLS{}
			if mode == "mtls" {
				srv := filepath.Join(dir, pki.RoleServer)
				cert, err := tls.LoadX509KeyPair(filepath.Join(srv, pki.FrontendCertFile), filepath.Join(srv, pki.FrontendKeyFile))
				require.NoError(b, err)
				pool := x509.NewCertPool()
				b2, err := os.ReadFile(filepath.Join(srv, pki.CAFile))
				require.NoError(b, err)
				pool.AppendCertsFromPEM(b2)
				opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})))
				tt = role(dir, pki.RoleWorker)
			}
			s := grpc.NewServer(opts...)
			workflowservice.RegisterWorkflowServiceServer(s, systemInfo{})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			go func() { _ = s.Serve(ln) }()
			defer s.Stop()
			c, err := Dial(config.Config{TemporalAddress: ln.Addr().String(), Namespace: "default", TemporalTLS: tt}, client.Options{})
			require.NoError(b, err)
			defer c.Close()
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := c.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestDialSaysTheFrontendsCertificateExpired(t *testing.T) {
	dir := t.TempDir()
	// Issued two years ago: every certificate but the CAs has expired.
	_, err := pki.Ensure(pki.Options{Dir: dir, Hosts: []string{"127.0.0.1"}, Now: func() time.Time { return time.Now().Add(-2 * pki.LeafLifetime) }})
	require.NoError(t, err)
	f := startFrontend(t, dir, "tls")
	err = dial(t, f.addr, config.TemporalTLS{Enabled: true, CAFile: role(dir, pki.RoleCLI).CAFile})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the frontend's certificate has expired")
}

// Calls reach the frontend uncompressed unless TETHER_TEMPORAL_GZIP asks
// for the SDK's gzip; a compression a caller set is kept.
func TestCallsAreUncompressedUnlessAsked(t *testing.T) {
	f := startFrontend(t, certs(t), "plain")
	encodings := func(cfg config.Config) []string {
		var seen []string
		var mu sync.Mutex
		o := client.Options{ConnectionOptions: client.ConnectionOptions{GetSystemInfoTimeout: 5 * time.Second,
			DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				for _, o := range opts {
					if c, ok := o.(grpc.CompressorCallOption); ok {
						mu.Lock()
						seen = append(seen, c.CompressorType)
						mu.Unlock()
					}
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			})}}}
		cfg.TemporalAddress, cfg.Namespace, cfg.TemporalTLS = f.addr, "default", config.TemporalTLS{Disabled: true}
		c, err := Dial(cfg, o)
		require.NoError(t, err)
		_, _ = c.WorkflowService().GetSystemInfo(t.Context(), &workflowservice.GetSystemInfoRequest{})
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	assert.NotContains(t, encodings(config.Config{}), "gzip")
	assert.Contains(t, encodings(config.Config{TemporalGzip: true}), "gzip")

	opts, err := Options(config.Config{}, client.Options{ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionGzip{}}})
	require.NoError(t, err)
	assert.IsType(t, &client.GrpcCompressionGzip{}, opts.ConnectionOptions.GrpcCompression)
}
