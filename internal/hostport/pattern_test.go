package hostport

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPatterns(t *testing.T) {
	for in, want := range map[string]string{
		"api.example.com:443": "api.example.com:443", "API.Example.com.:443": "api.example.com:443",
		"*.example.com:443": "*.example.com:443", "*:*": "*:*", "[::1]:8080": "[::1]:8080", "10.0.0.5:*": "10.0.0.5:*",
		"[::ffff:127.0.0.1]:80": "127.0.0.1:80",
	} {
		p, err := ParsePattern(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, p.String(), in)
	}
	for _, in := range []string{"example.com", "example.com:0", "example.com:70000", "exa mple.com:443", ":443", "*.:443", "-x.com:443", "[fe80::1%eth0]:80", "a..b:1"} {
		_, err := ParsePattern(in)
		assert.ErrorIs(t, err, ErrBadPattern, in)
	}
	p := MustParsePatterns("*.example.com:443")[0]
	assert.True(t, p.Matches("a.example.com", 443))
	assert.True(t, p.Matches("A.b.Example.com.", 443))
	assert.False(t, p.Matches("example.com", 443), "a wildcard is for subdomains")
	assert.False(t, p.Matches("evilexample.com", 443))
	assert.False(t, p.Matches("a.example.com", 80))
	assert.False(t, p.Matches("93.184.216.34", 443), "a name pattern never matches an address")
	assert.False(t, p.Exact())
	ip := MustParsePatterns("127.0.0.1:8080")[0]
	assert.True(t, ip.Exact() && ip.IsAddr())
	assert.True(t, ip.Matches("127.0.0.1", 8080))
	assert.True(t, ip.Matches("[::ffff:127.0.0.1]", 8080))
	assert.False(t, ip.Matches("localhost", 8080), "an address pattern is not its names")
	assert.True(t, MustParsePatterns("*:443")[0].Matches("10.1.2.3", 443))

	for url, want := range map[string]string{
		"https://api.anthropic.com": "api.anthropic.com:443", "http://127.0.0.1:8080/v1": "127.0.0.1:8080",
		"http://localhost/x": "localhost:80", "https://user:pw@h.example:8443/p": "h.example:8443", "http://[::1]:9/": "[::1]:9",
	} {
		p, err := EndpointOf(url)
		require.NoError(t, err, url)
		assert.Equal(t, want, p.String(), url)
	}
	_, err := EndpointOf("ftp://x")
	assert.Error(t, err)
}

// splitHostPort accepts what net.SplitHostPort accepts and splits it
// alike (every string of up to six of the bytes that matter), so
// patterns read as they did when package net read them.
func TestSplitHostPortIsNets(t *testing.T) {
	const alphabet = "a:[]1"
	in := []string{""}
	for n, from := 0, 0; n < 6; n++ {
		to := len(in)
		for _, s := range in[from:to] {
			for _, c := range alphabet {
				in = append(in, s+string(c))
			}
		}
		from = to
	}
	for _, s := range append(in, "[::1]:8080", "[fe80::1%eth0]:80", "*.example.com:*", "[::ffff:127.0.0.1]:80") {
		wantHost, wantPort, err := net.SplitHostPort(s)
		host, port, ok := splitHostPort(s)
		require.Equal(t, err == nil, ok, "%q: %v", s, err)
		require.Equal(t, wantHost+" "+wantPort, host+" "+port, s)
	}
	for _, h := range []string{"a", "::1", "fe80::1%eth0", ""} {
		assert.Equal(t, net.JoinHostPort(h, "80"), joinHostPort(h, "80"))
	}
}

// Loopback is what package net says of an address, and localhost.
func TestLoopback(t *testing.T) {
	for _, h := range []string{"localhost", "LocalHost", "localhost.", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"} {
		assert.True(t, Loopback(h), h)
		if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
			assert.True(t, ip.IsLoopback(), h)
		}
	}
	for _, h := range []string{"", "example.com", "localhost.example.com", "10.0.0.1", "::", "0.0.0.0", "fe80::1", "::1%lo", "127.0.0.1:80", "1.2.3.4.5"} {
		assert.False(t, Loopback(h), h)
	}
}
