package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/hostport"
)

// Service is one of the worker's own endpoints (the Temporal frontend, the
// store, the metrics listener, a database): no confined process may reach
// it, whatever its node allows.
type Service struct {
	// Name says what it is, for the note a refusal leaves.
	Name string
	// Addr is its host:port.
	Addr string
}

// Guard is what every visit's proxy refuses, whatever the node allows:
// the worker's services, link-local and cloud metadata addresses,
// unspecified, multicast and broadcast addresses, and a loopback or local
// address unless a pattern names it exactly.
type Guard struct {
	// byAddr are services at a remote address; byName the same by the name
	// they were given; localPorts are ports of services on this machine,
	// refused on every local address (a server listening on 0.0.0.0 is
	// reachable through each of them).
	byAddr     map[netip.AddrPort]string
	byName     map[string]string
	localPorts map[int]string
	local      []netip.Addr
	resolver   *net.Resolver
}

// NewGuard resolves services once and learns this machine's addresses. A
// service whose address does not parse is an error; one whose name does
// not resolve now is still refused by name.
func NewGuard(ctx context.Context, services []Service) (*Guard, error) {
	g := &Guard{byAddr: map[netip.AddrPort]string{}, byName: map[string]string{}, localPorts: map[int]string{}, resolver: net.DefaultResolver}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				g.local = append(g.local, p.Addr().Unmap())
			}
		}
	}
	for _, s := range services {
		if s.Addr == "" {
			continue
		}
		host, portStr, err := net.SplitHostPort(s.Addr)
		if err != nil {
			return nil, fmt.Errorf("egress: the address of %s, %q: want host:port", s.Name, s.Addr)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("egress: the port of %s, %q: want 1-65535", s.Name, s.Addr)
		}
		if port == 0 {
			// A listener on a port the kernel picks (a test's metrics):
			// no port to refuse, and a loopback one needs an exact
			// pattern anyway.
			continue
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		g.byName[net.JoinHostPort(host, portStr)] = s.Name
		var ips []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{a.Unmap()}
		} else if host == "" {
			ips = []netip.Addr{netip.IPv4Unspecified()}
		} else {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, _ := g.resolver.LookupNetIP(rctx, "ip", host)
			cancel()
			for _, a := range got {
				ips = append(ips, a.Unmap())
			}
		}
		for _, a := range ips {
			if g.isLocal(a) || a.IsUnspecified() {
				g.localPorts[port] = s.Name
			} else {
				g.byAddr[netip.AddrPortFrom(a, uint16(port))] = s.Name
			}
		}
	}
	return g, nil
}

// metadata are cloud instance-metadata addresses outside the link-local
// ranges (those are refused as a whole).
var metadata = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
}

// isLocal reports whether a is a loopback address or one of this
// machine's own.
func (g *Guard) isLocal(a netip.Addr) bool {
	return a.IsLoopback() || slices.Contains(g.local, a)
}

// refuseName is why a request for host:port is refused before any name
// is resolved ("" when it is not).
func (g *Guard) refuseName(host string, port int) string {
	key := net.JoinHostPort(strings.TrimSuffix(strings.ToLower(host), "."), strconv.Itoa(port))
	if name, ok := g.byName[key]; ok {
		return "the worker's " + name
	}
	return ""
}

// refuseAddr is why a connection to a:port, reached through pattern p, is
// refused ("" when it is not).
func (g *Guard) refuseAddr(a netip.Addr, port int, p hostport.Pattern) string {
	a = a.Unmap()
	switch {
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || slices.Contains(metadata, a):
		return "a link-local or cloud metadata address"
	case a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "an unspecified, multicast or broadcast address"
	}
	if name, ok := g.byAddr[netip.AddrPortFrom(a, uint16(port))]; ok {
		return "the worker's " + name
	}
	if g.isLocal(a) {
		if name, ok := g.localPorts[port]; ok {
			return "the worker's " + name
		}
		if !p.Exact() {
			return "a loopback or local address, which only an exact host:port in the allowlist reaches"
		}
	}
	return ""
}
