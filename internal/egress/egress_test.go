package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/hostport"
)

// proxyFor serves a proxy allowing allow, with services refused.
func proxyFor(t *testing.T, services []Service, allow ...string) (*Listener, string) {
	t.Helper()
	g, err := NewGuard(context.Background(), services)
	require.NoError(t, err)
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := g.Listen(sock, hostport.MustParsePatterns(allow...), nil)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, sock
}

// connect asks the proxy at sock for a tunnel to target and returns the
// status code, and the tunnel when it was opened.
func connect(t *testing.T, sock, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return resp.StatusCode, nil
	}
	return resp.StatusCode, c
}

func TestProxyAllowsTheAllowlistOnly(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "site:"+r.URL.Path) }))
	t.Cleanup(site.Close)
	var hits atomic.Int64
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(svc.Close)
	siteAddr, svcAddr := site.Listener.Addr().String(), svc.Listener.Addr().String()
	_, svcPort, _ := net.SplitHostPort(svcAddr)

	// The service listens on 127.0.0.1, named as localhost: refused on
	// every local address, by any name.
	l, sock := proxyFor(t, []Service{{Name: "Temporal frontend", Addr: "localhost:" + svcPort}}, siteAddr, "127.0.0.1:*", svcAddr, "localhost:*")

	code, c := connect(t, sock, siteAddr)
	require.Equal(t, 200, code)
	fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	c.Close()
	assert.Contains(t, string(b), "site:/tunnel", "the tunnel carries the request")

	// A plain request, in absolute form.
	pc, err := net.Dial("unix", sock)
	require.NoError(t, err)
	fmt.Fprintf(pc, "GET http://%s/plain HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic eDp5\r\n\r\n", siteAddr, siteAddr)
	b, _ = io.ReadAll(pc)
	pc.Close()
	assert.Contains(t, string(b), "site:/plain")

	for target, why := range map[string]string{
		svcAddr:                "the worker's Temporal frontend",
		"localhost:" + svcPort: "the worker's Temporal frontend",
		"127.0.0.1:1":          "a loopback or local address, which only an exact host:port in the allowlist reaches",
		"unlisted.example:443": "not in the node's network allowlist",
		"169.254.169.254:80":   "not in the node's network allowlist",
	} {
		code, _ := connect(t, sock, target)
		assert.Equal(t, http.StatusForbidden, code, target)
		assert.Contains(t, l.Refused(), "CONNECT "+target+" refused: "+why)
	}
	assert.Zero(t, hits.Load(), "nothing reached the service")
	for _, n := range l.Refused() {
		assert.NotContains(t, n, "site:", "a note holds no data")
	}
}

func TestGuardServices(t *testing.T) {
	_, err := NewGuard(context.Background(), []Service{{Name: "metrics listener", Addr: "127.0.0.1:0"}, {Name: "x", Addr: ""}})
	assert.NoError(t, err, "a port the kernel picks has nothing to refuse yet")
	for _, addr := range []string{"no-port", "h:99999", "h:-1"} {
		_, err := NewGuard(context.Background(), []Service{{Name: "s", Addr: addr}})
		assert.Error(t, err, addr)
	}
}

func TestProxyRefusesMetadataWhateverIsAllowed(t *testing.T) {
	l, sock := proxyFor(t, nil, "*:*", "169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80", "0.0.0.0:80")
	for _, target := range []string{"169.254.169.254:80", "[fe80::1]:80", "[fd00:ec2::254]:80", "100.100.100.200:80"} {
		code, _ := connect(t, sock, target)
		assert.Equal(t, http.StatusForbidden, code, target)
	}
	code, _ := connect(t, sock, "0.0.0.0:80")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Len(t, l.Refused(), 5)
	for _, n := range l.Refused()[:4] {
		assert.Contains(t, n, "a link-local or cloud metadata address")
	}
}

// A name that resolves to a refused address is refused with it: DNS is no
// way around the guard.
func TestProxyChecksWhereANameLeads(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(svc.Close)
	_, port, _ := net.SplitHostPort(svc.Listener.Addr().String())
	l, sock := proxyFor(t, []Service{{Name: "S3 endpoint", Addr: svc.Listener.Addr().String()}}, "*.localhost:*", "localhost:"+port)
	code, _ := connect(t, sock, "localhost:"+port)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, strings.Join(l.Refused(), "\n"), "refused: the worker's S3 endpoint")
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c) // holds the tunnel open
		}
	}()
	l, sock := proxyFor(t, nil, ln.Addr().String())
	code, c := connect(t, sock, ln.Addr().String())
	require.Equal(t, 200, code)
	done := make(chan struct{})
	go func() { _, _ = io.ReadAll(c); close(done) }()
	require.NoError(t, l.Close())
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a tunnel open")
	}
	_, err = net.Dial("unix", sock)
	assert.Error(t, err, "the socket is gone")
}
