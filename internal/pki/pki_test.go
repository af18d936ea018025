package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ensure(t *testing.T, o Options) []string {
	t.Helper()
	issued, err := Ensure(o)
	require.NoError(t, err)
	return issued
}

func TestEnsureIssuesEveryRoleItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	issued := ensure(t, Options{Dir: dir, Hosts: []string{"127.0.0.1", "localhost"}})
	assert.ElementsMatch(t, []string{"client CA", FrontendName, "temporal-system-worker", "tether-worker", "tether-cli", "temporal-ui", "internode"}, issued)

	ca := mustCert(t, filepath.Join(dir, RoleCA, CAFile))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, role := range ClientRoles {
		d := filepath.Join(dir, role)
		assert.ElementsMatch(t, []string{CAFile, CertFile, KeyFile}, names(t, d), "%s holds only its own files", role)
		assert.Equal(t, read(t, filepath.Join(dir, RoleCA, CAFile)), read(t, filepath.Join(d, CAFile)))
		c := mustCert(t, filepath.Join(d, CertFile))
		_, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		assert.NoError(t, err, "%s is a client certificate of the client CA", role)
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.Error(t, err, "%s cannot serve as the frontend", role)
	}
	srv := filepath.Join(dir, RoleServer)
	assert.NotContains(t, names(t, srv), KeyFile)
	front := mustCert(t, filepath.Join(srv, FrontendCertFile))
	for _, h := range []string{"127.0.0.1", "localhost", FrontendName} {
		_, err := front.Verify(x509.VerifyOptions{Roots: pool, DNSName: h})
		assert.NoError(t, err, "the frontend's certificate is valid for %s", h)
	}
	assert.Error(t, front.VerifyHostname("10.0.0.1"))

	// The internode certificate chains to a CA of its own, and no client
	// certificate chains to that one.
	inPool := x509.NewCertPool()
	inPool.AddCert(mustCert(t, filepath.Join(srv, InternodeCAFile)))
	in := mustCert(t, filepath.Join(srv, InternodeCertFile))
	_, err := in.Verify(x509.VerifyOptions{Roots: inPool, DNSName: InternodeName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)
	_, err = in.Verify(x509.VerifyOptions{Roots: pool})
	assert.Error(t, err)
	_, err = mustCert(t, filepath.Join(dir, RoleWorker, CertFile)).Verify(x509.VerifyOptions{Roots: inPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	assert.Error(t, err, "a client certificate is refused between the server's services")

	// Keys and directories are the owner's alone.
	for _, p := range []string{filepath.Join(dir, RoleCA, KeyFile), filepath.Join(srv, FrontendKeyFile), filepath.Join(srv, InternodeKeyFile), filepath.Join(dir, RoleUI, KeyFile)} {
		assert.Equal(t, os.FileMode(0o600), mode(t, p), p)
	}
	for _, d := range []string{dir, srv, filepath.Join(dir, RoleWorker)} {
		assert.Equal(t, os.FileMode(0o700), mode(t, d), d)
	}
}

func TestEnsureKeepsWhatIsValidAndRenewsWhatExpires(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	o := Options{Dir: dir, Hosts: []string{"127.0.0.1"}, Now: func() time.Time { return now }}
	ensure(t, o)
	caPEM := read(t, filepath.Join(dir, RoleCA, CAFile))
	workerPEM := read(t, filepath.Join(dir, RoleWorker, CertFile))

	assert.Empty(t, ensure(t, o), "a second run keeps every certificate")
	assert.Equal(t, workerPEM, read(t, filepath.Join(dir, RoleWorker, CertFile)))

	// Another host: only the frontend's certificate changes.
	o.Hosts = append(o.Hosts, "temporal")
	assert.Equal(t, []string{FrontendName}, ensure(t, o))

	// A broken key: only its certificate is issued again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, RoleCLI, KeyFile), []byte("not a key"), 0o600))
	assert.Equal(t, []string{"tether-cli"}, ensure(t, o))

	// Within RenewBefore of the leaves' end, they are renewed under the
	// same CA, which every client already trusts.
	now = now.Add(LeafLifetime - RenewBefore + time.Hour)
	issued := ensure(t, o)
	assert.NotContains(t, issued, "client CA")
	assert.Contains(t, issued, "tether-worker")
	assert.Contains(t, issued, "internode")
	assert.Equal(t, caPEM, read(t, filepath.Join(dir, RoleCA, CAFile)))
	assert.NotEqual(t, workerPEM, read(t, filepath.Join(dir, RoleWorker, CertFile)))

	// A new CA means new client certificates for everyone.
	require.NoError(t, os.Remove(filepath.Join(dir, RoleCA, KeyFile)))
	issued = ensure(t, o)
	assert.Contains(t, issued, "client CA")
	assert.Contains(t, issued, "temporal-ui")
	assert.NotEqual(t, caPEM, read(t, filepath.Join(dir, RoleWorker, CAFile)))
}

// The files make the handshake Temporal's frontend does with
// requireClientAuth: a client with its role's certificate gets in, one
// without a certificate, or with the internode certificate, does not.
func TestFrontendHandshakeNeedsAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ensure(t, Options{Dir: dir, Hosts: []string{"127.0.0.1"}})
	srv := filepath.Join(dir, RoleServer)
	front, err := tls.LoadX509KeyPair(filepath.Join(srv, FrontendCertFile), filepath.Join(srv, FrontendKeyFile))
	require.NoError(t, err)
	clients := x509.NewCertPool()
	require.True(t, clients.AppendCertsFromPEM(read(t, filepath.Join(srv, CAFile))))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{front}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(read(t, filepath.Join(dir, RoleWorker, CAFile))))
	dial := func(certs ...tls.Certificate) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, Certificates: certs})
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate on the first read.
		_, err = c.Read(make([]byte, 2))
		return err
	}
	for _, role := range ClientRoles {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, role, CertFile), filepath.Join(dir, role, KeyFile))
		require.NoError(t, err)
		assert.NoError(t, dial(pair), role)
	}
	assert.Error(t, dial(), "no client certificate")
	in, err := tls.LoadX509KeyPair(filepath.Join(srv, InternodeCertFile), filepath.Join(srv, InternodeKeyFile))
	require.NoError(t, err)
	assert.Error(t, dial(in), "a certificate of another CA")
}

func mustCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := readCert(path)
	require.NoError(t, err)
	return c
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}
