// Package hostport reads and matches host:port patterns, the allowlist of
// what a confined process may reach (a node's network: field, a model
// endpoint): a name, a wildcard over a name's subdomains, any host, or an
// IP address, with a port or any. It is a leaf: graph validation, the
// worker's configuration, the executors, the sandbox and the egress proxy
// all read patterns through it without linking a network client or
// server.
package hostport

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadPattern is a host:port pattern that does not parse.
var ErrBadPattern = errors.New("hostport: bad host:port pattern")

// Pattern is one host:port a confined process may reach: Host is a name
// (api.example.com), a wildcard over a name's subdomains (*.example.com),
// any host (*), or an IP address; Port is a number, or 0 for any port (*).
type Pattern struct {
	Host string
	Port int
	// wildcard marks a Host of * or *.suffix.
	wildcard bool
	addr     netip.Addr
}

// ParsePattern reads host:port, [ipv6]:port, *.domain:port, *:port, with
// port a number or *.
func ParsePattern(s string) (Pattern, error) {
	host, port, ok := splitHostPort(strings.TrimSpace(s))
	if !ok {
		return Pattern{}, fmt.Errorf("%w %q: write host:port, e.g. api.example.com:443, *.example.com:443 or [::1]:8080", ErrBadPattern, s)
	}
	p := Pattern{Host: strings.ToLower(host)}
	if h, ok := strings.CutSuffix(p.Host, "."); ok {
		// A fully qualified name; never "*." made into "*".
		if h == "" || strings.HasSuffix(h, "*") {
			return Pattern{}, fmt.Errorf("%w %q: %q is not a host name", ErrBadPattern, s, host)
		}
		p.Host = h
	}
	switch {
	case port == "*":
	default:
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Pattern{}, fmt.Errorf("%w %q: the port must be 1-65535 or *", ErrBadPattern, s)
		}
		p.Port = n
	}
	if a, err := netip.ParseAddr(p.Host); err == nil {
		if a.Zone() != "" {
			return Pattern{}, fmt.Errorf("%w %q: an address with a zone is not allowed", ErrBadPattern, s)
		}
		p.addr = a.Unmap()
		p.Host = p.addr.String()
		return p, nil
	}
	name := p.Host
	switch {
	case name == "*":
		p.wildcard = true
		return p, nil
	case strings.HasPrefix(name, "*."):
		p.wildcard = true
		name = name[2:]
	}
	if !validName(name) {
		return Pattern{}, fmt.Errorf("%w %q: %q is not a host name (letters, digits, '-' and '.', or *. in front)", ErrBadPattern, s, host)
	}
	return p, nil
}

// MustParsePatterns parses each of ss; for fixed lists in code and tests.
func MustParsePatterns(ss ...string) []Pattern {
	out := make([]Pattern, len(ss))
	for i, s := range ss {
		p, err := ParsePattern(s)
		if err != nil {
			panic(err)
		}
		out[i] = p
	}
	return out
}

// ParsePatterns parses every entry of ss and returns the first error.
func ParsePatterns(ss []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(ss))
	for _, s := range ss {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// String is the pattern as it is written.
func (p Pattern) String() string {
	port := "*"
	if p.Port != 0 {
		port = strconv.Itoa(p.Port)
	}
	return joinHostPort(p.Host, port)
}

// Exact reports whether the pattern names one host and one port: only
// such a pattern may reach a loopback or local address.
func (p Pattern) Exact() bool { return !p.wildcard && p.Port != 0 }

// IsAddr reports whether the pattern's host is an IP address.
func (p Pattern) IsAddr() bool { return p.addr.IsValid() }

// Matches reports whether host (a name or an IP address, as a client
// asked for it) and port fall under the pattern.
func (p Pattern) Matches(host string, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return p.addr.IsValid() && p.addr == a.Unmap() || p.Host == "*"
	}
	switch {
	case p.Host == "*":
		return true
	case p.wildcard:
		suffix := p.Host[1:] // ".example.com"
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == p.Host
}

// EndpointOf is the host:port of a model endpoint URL (https://host/...,
// http://127.0.0.1:8080/v1), with the scheme's default port.
func EndpointOf(rawURL string) (Pattern, error) {
	rest, ok := strings.CutPrefix(rawURL, "https://")
	def := "443"
	if !ok {
		if rest, ok = strings.CutPrefix(rawURL, "http://"); !ok {
			return Pattern{}, fmt.Errorf("%w: endpoint %q is not an http or https URL", ErrBadPattern, rawURL)
		}
		def = "80"
	}
	hostport, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(hostport, "@"); i >= 0 {
		hostport = hostport[i+1:]
	}
	if _, _, ok := splitHostPort(hostport); !ok {
		hostport = joinHostPort(strings.Trim(hostport, "[]"), def)
	}
	return ParsePattern(hostport)
}

// splitHostPort is net.SplitHostPort without linking package net (and its
// resolver) into graph validation: host:port or [host]:port, the host
// without colons or brackets unless bracketed, the port without either.
// It accepts exactly what net.SplitHostPort accepts
// (TestSplitHostPortIsNets).
func splitHostPort(s string) (host, port string, ok bool) {
	i := strings.LastIndexByte(s, ':') // the port starts after the last colon
	if i < 0 {
		return "", "", false
	}
	j, k := 0, 0
	if s[0] == '[' {
		// The first ']' just before the last ':'.
		end := strings.IndexByte(s, ']')
		if end < 0 || end+1 != i {
			return "", "", false
		}
		host, j, k = s[1:end], 1, end+1
	} else {
		host = s[:i]
		if strings.IndexByte(host, ':') >= 0 {
			return "", "", false
		}
	}
	if strings.IndexByte(s[j:], '[') >= 0 || strings.IndexByte(s[k:], ']') >= 0 {
		return "", "", false
	}
	return host, s[i+1:], true
}

// joinHostPort is net.JoinHostPort: an IPv6 host in brackets.
func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
